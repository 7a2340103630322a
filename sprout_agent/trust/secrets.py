"""Which environment variables are credentials: the one filter for every child the agent or a tool starts.

Stdlib only, so the core (settings.child_environment) and the built-in tools share it. A variable is
dropped when its name has a secret-sounding part or its value carries a credential; docs/tools.md
lists the rules exactly. When unsure, it errs on the side of dropping: a missing variable is an error
message, a leaked key is not undoable.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping

# Name parts (split on `_`, other non-alphanumerics and camelCase) that mark a credential. HEADERS: a collector's
# key goes in OTEL_EXPORTER_OTLP_HEADERS; HEADER: an Azure managed identity's secret is IDENTITY_HEADER;
# AUTHORIZATION: a header's name as much as a variable's.
SECRET_PARTS = frozenset(
    {"KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD",
     "PASS", "PASSPHRASE", "PAT", "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "PRIVATE", "COOKIE",
     "COOKIES", "SESSION", "SIGNATURE", "DSN", "HEADER", "HEADERS", "AUTHORIZATION"}
)  # fmt: skip
# Substrings that mark a credential even inside one part (GHTOKEN, MYAPIKEY, DBPASSWORD).
SECRET_SUBSTRINGS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "PRIVATEKEY")
# Whole names dropped whatever their parts: the agent's own configuration carries the API key.
SECRET_PREFIXES = ("ANTHROPIC_",)
# Names that match a part above but hold no secret, and that common tools need.
NOT_SECRET = frozenset(
    {"SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER", "DESKTOP_SESSION", "XDG_SESSION_ID",
     "XDG_SESSION_TYPE", "XDG_SESSION_CLASS", "XDG_SESSION_DESKTOP", "TOKENIZERS_PARALLELISM"}
)  # fmt: skip
# scheme://user:password@host, anywhere in the value (DATABASE_URL, pip's index URLs, proxy URLs).
# The scheme starts where no scheme character precedes it: without that, a long run of letters is tried from each of
# its positions (a 64 KB value took 2 s).
# Group 1 is what comes before the password, so a filter can keep it (`postgres://app:[redacted]@db`).
URL_PASSWORD = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:)[^\s/@]+@")
# Prefixes of well-known key formats, so a key under an innocent name is still caught. The clouds': AWS access key
# ids (long-lived AKIA, temporary ASIA), Bedrock API keys (long-term ABSK…, short-term bedrock-api-key-…) and
# Google OAuth access tokens (ya29.…), with the characters theirs hold beyond a name's.
KEY_FORMATS = (
    r"sk-ant-|sk-proj-|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abpr]-|A[KS]IA[0-9A-Z]{16}|"
    r"ABSK[A-Za-z0-9+/=]{8,}|bedrock-api-key-[A-Za-z0-9+/=]*|ya29\.[A-Za-z0-9._-]+"
)
_KEY_VALUE = re.compile(f"^({KEY_FORMATS})")
# The same keys inside a text (a prompt, a tool's output): the prefix and what follows it where no letter or digit
# precedes it (an `_` may: `gh__ghp_…`, a tool named after a key) or after a JSON escape (`\n`: a tool's input is
# recorded as JSON, and a key on a line of its own follows an `n`).
KEY_IN_TEXT = rf"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))(?:{KEY_FORMATS})[A-Za-z0-9_-]*"
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


def name_parts(name: str) -> list[str]:
    """`githubToken` and `GITHUB-TOKEN` and `GITHUB_TOKEN` all give ["GITHUB", "TOKEN"]."""
    return [part for part in _SPLIT.split(_CAMEL.sub(r"\1_\2", name).upper()) if part]


def secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in NOT_SECRET:
        return False
    if upper.startswith(SECRET_PREFIXES) or any(s in upper for s in SECRET_SUBSTRINGS):
        return True
    return any(part in SECRET_PARTS for part in name_parts(name))


def secret_value(value: str) -> bool:
    return bool(("://" in value and URL_PASSWORD.search(value)) or _KEY_VALUE.match(value))


def is_secret(name: str, value: str) -> bool:
    """True when a child process must not see this variable."""
    return secret_name(name) or secret_value(value)


def without_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of `environ` without the variables `is_secret` flags."""
    return {name: value for name, value in environ.items() if not is_secret(name, value)}


REDACTED = "[redacted]"
MIN_KNOWN_SECRET = 8  # a shorter credential's value is too likely to be in any text (`1`, `true`): not replaced


def redactor(known: Mapping[str, str]) -> Callable[[str], str]:
    """The one text filter for what leaves the agent for others to read (telemetry, `mcp list`): replaces the value of
    every credential in `known` (variables `is_secret` flags: the API key, the config's server credentials), anything
    shaped like a well-known key, and a URL's password with `[redacted]`."""
    secrets = {v for k, v in known.items() if is_secret(k, v) and len(v) >= MIN_KNOWN_SECRET}
    # A tool's input is recorded as JSON: a value with a quote or a backslash is there in its escaped form.
    escaped = {json.dumps(v, ensure_ascii=False)[1:-1] for v in secrets}
    values = sorted(secrets | escaped, key=len, reverse=True)
    pattern = re.compile("|".join([*(re.escape(v) for v in values), KEY_IN_TEXT]))

    def redact(text: str) -> str:
        return URL_PASSWORD.sub(rf"\1{REDACTED}@", pattern.sub(REDACTED, text))

    return redact


def command_env() -> dict[str, str]:
    """The environment every child of a built-in tool gets (bash, ripgrep, git): this process's, filtered."""
    return without_secrets(os.environ)
