"""A project's `.env`: settings for the run, never destinations nor guards. Read once, with the names a cloned
repository may not set (guarded_env.py: the API endpoint, proxies, PATH, hooks, consent, the sandbox, …) ignored
with a notice; docs/security.md."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

from dotenv import dotenv_values

from sprout_agent.config.guarded_env import refused_because
from sprout_agent.config.sources import untrusted_place
from sprout_agent.core.errors import ConfigError
from sprout_agent.trust.opening import Reader, Refused, under
from sprout_agent.trust.write_policy import git_root

DOTENV_MAX_BYTES = 1024 * 1024  # a .env is a few lines; a hostile one is not read into memory whole


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
    reader = Reader()
    real = reader.resolve(str(path), str(cwd))
    project = os.path.realpath(git_root(str(cwd)) or cwd)
    if not under(real, project):  # a repository's `.env -> ~/.aws/credentials`: your keys as "the project's"
        return DotEnv({}, (), f"{path}: not read (a symbolic link out of the project, to {real})")
    try:
        with reader.open_file(real, str(path)) as handle:  # along the path checked, never through a link
            data = handle.read(DOTENV_MAX_BYTES + 1)
        if len(data) > DOTENV_MAX_BYTES:
            raise ConfigError(f"{path}: larger than {DOTENV_MAX_BYTES // 1024} KiB: not a .env file")
        values = dotenv_values(stream=io.StringIO(data.decode("utf-8")))
    except (OSError, UnicodeDecodeError, Refused) as exc:
        raise ConfigError(f"{path}: cannot read .env file: {exc}") from None
    kept = {key: value for key, value in values.items() if value is not None}
    for key, value in kept.items():
        if "\0" in key or "\0" in value:  # no environment can carry it: every spawn would fail
            raise ConfigError(f"{path}: {key!r} holds a NUL byte")
    ignored = tuple(sorted(key for key in kept if refused_because(key)))
    return DotEnv({key: value for key, value in kept.items() if key not in ignored}, ignored)
