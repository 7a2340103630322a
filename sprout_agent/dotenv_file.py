"""A project's `.env`: settings for the run, never destinations. Read once, with the names a cloned repository
may not choose (the API endpoint, proxies, PATH, the sandbox, …) refused with a notice; docs/security.md."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dotenv import dotenv_values

from sprout_agent.errors import ConfigError

# What a project's `.env` may not set, because a cloned repository must not choose where requests and
# credentials go or what runs: the endpoint and every ANTHROPIC_* but the key and the model, proxies and CA
# bundles, the hook allowlist, price overrides (they would switch off --max-budget-usd), PATH and the loader
# and interpreter variables, nor loosen the sandbox (the SPROUT_AGENT_SANDBOX* and built-in tool variables are
# read from the real environment only), nor choose the command a batch task runs or the file its runs write.
# Ignored with a notice.
_DOTENV_REFUSED = re.compile(
    r"ANTHROPIC_(?!API_KEY$|MODEL$).*|.*_PROXY|SSL_CERT_.*|.*_CA_BUNDLE|NODE_EXTRA_CA_CERTS|NODE_OPTIONS|NODE_TLS_.*"
    r"|MCP_HOOK_SERVERS|SPROUT_AGENT_PRICES|PATH|PYTHON.*|LD_.*|DYLD_.*|SPROUT_AGENT_SANDBOX.*|SPROUT_DEV_.*"
    # The batch's own: the command each task runs, and the rate gate file every run writes on a 429.
    r"|SPROUT_AGENT_BATCH_.*|SPROUT_AGENT_RATE_GATE",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DotEnv:
    values: dict[str, str]  # what the run may use, under the real environment
    ignored: tuple[str, ...]  # names the file set that a project may not choose

    @property
    def notices(self) -> tuple[str, ...]:
        if not self.ignored:
            return ()
        names = ", ".join(self.ignored)
        return (
            f".env: ignored {names} (a project file cannot choose the API endpoint, proxies, PATH or the sandbox; "
            "export them)",
        )


def read_dotenv(cwd: Path) -> DotEnv:
    """Values from `cwd/.env`, if present, minus the names a project may not set."""
    path = cwd / ".env"
    if not path.is_file():
        return DotEnv({}, ())
    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read .env file: {exc}") from None
    kept = {key: value for key, value in values.items() if value is not None}
    for key, value in kept.items():
        if "\0" in key or "\0" in value:  # no environment can carry it: every spawn would fail
            raise ConfigError(f"{path}: {key!r} holds a NUL byte")
    ignored = tuple(sorted(key for key in kept if _DOTENV_REFUSED.fullmatch(key)))
    return DotEnv({key: value for key, value in kept.items() if key not in ignored}, ignored)
