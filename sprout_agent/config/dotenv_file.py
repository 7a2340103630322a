"""A project's `.env`: settings for the run, never destinations nor guards. Read once, with the names a cloned
repository may not set (guarded_env.py: the API endpoint, proxies, PATH, hooks, consent, the sandbox, …) ignored
with a notice; docs/security.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dotenv import dotenv_values

from sprout_agent.config.guarded_env import refused_because
from sprout_agent.config.sources import untrusted_place
from sprout_agent.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class DotEnv:
    values: dict[str, str]  # what the run may use, under the real environment
    ignored: tuple[str, ...]  # names the file set that a project may not choose
    unread: str | None = None  # the notice for a file not read at all (untrusted_place)

    @property
    def notices(self) -> tuple[str, ...]:
        if self.unread is not None:
            return (self.unread,)
        if not self.ignored:
            return ()
        names = ", ".join(self.ignored)
        return (
            f".env: ignored {names} (a project's .env cannot choose where requests go, what runs or your guards; "
            "export them)",
        )


def read_dotenv(cwd: Path) -> DotEnv:
    """Values from `cwd/.env`, if present and in a place of its owner's, minus the names a project may not set."""
    path = cwd / ".env"
    if not path.is_file():
        return DotEnv({}, ())
    # As for the .mcp.json beside it: in /tmp, or owned by somebody else, anybody could have put it there.
    if why := untrusted_place(path):
        return DotEnv({}, (), f"{path}: not read ({why})")
    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read .env file: {exc}") from None
    kept = {key: value for key, value in values.items() if value is not None}
    for key, value in kept.items():
        if "\0" in key or "\0" in value:  # no environment can carry it: every spawn would fail
            raise ConfigError(f"{path}: {key!r} holds a NUL byte")
    ignored = tuple(sorted(key for key in kept if refused_because(key)))
    return DotEnv({key: value for key, value in kept.items() if key not in ignored}, ignored)
