"""SPROUT_AGENT_* and related environment settings: one table, parsed and checked once; the child env."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sprout_agent.config.env_vars import DEFAULT_MODEL as DEFAULT_MODEL
from sprout_agent.config.env_vars import DEFAULTS
from sprout_agent.config.env_vars import ENV_VARS as ENV_VARS
from sprout_agent.config.env_vars import PROCESS_ENV_VARS as PROCESS_ENV_VARS
from sprout_agent.config.env_vars import EnvVar as EnvVar
from sprout_agent.config.env_vars import render_env_example as render_env_example
from sprout_agent.config.provider import Provider, checked_url, choose, native_model
from sprout_agent.config.provider import is_unicode as is_unicode
from sprout_agent.core.errors import UsageError
from sprout_agent.trust.env_flags import env_flag
from sprout_agent.trust.secrets import is_secret  # one filter for every child, shared with the tools


def _raw(env: Mapping[str, str], name: str) -> str | None:
    """The value, or the table default; set-but-blank counts as unset."""
    value = env.get(name, "").strip()
    return value or DEFAULTS[name] or None


THINKING_SETTINGS = ("adaptive", "on", "off")
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")


def choice(value: str | None, allowed: tuple[str, ...], name: str) -> str | None:
    """One of `allowed` (any case), None when unset; anything else is a UsageError naming the choices."""
    if value is None or not value.strip():
        return None
    word = value.strip().lower()
    if word not in allowed:
        raise UsageError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return word


ELICITATION_POLICIES = ("decline", "accept-defaults")  # elicitation.Unattended reads the same words


def elicitation_policy(flag: str | None, environ: Mapping[str, str]) -> str:
    """--elicitation, else SPROUT_AGENT_ELICITATION from the real environment (a project's .env must not make
    the agent answer its servers' questions), else decline."""
    chosen = choice(flag, ELICITATION_POLICIES, "--elicitation")
    return (
        chosen
        or choice(environ.get("SPROUT_AGENT_ELICITATION"), ELICITATION_POLICIES, "SPROUT_AGENT_ELICITATION")
        or "decline"
    )


def sampling_allowed(flag: bool, environ: Mapping[str, str]) -> bool:
    """--allow-sampling, or SPROUT_AGENT_ALLOW_SAMPLING=1 in the real environment (never .env: it spends money)."""
    return flag or env_flag(environ, "SPROUT_AGENT_ALLOW_SAMPLING")


def _switch(env: Mapping[str, str], name: str) -> bool:
    """A switch (trust/env_flags.py's spellings), else the table's default; a misspelt one is a UsageError."""
    try:
        return env_flag(env, name, env_flag(DEFAULTS, name), strict=True)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _int(env: Mapping[str, str], name: str, minimum: int) -> int:
    value = _raw(env, name)
    # Beyond 18 digits `int()` may refuse the string (CPython's 4300-digit limit) and no setting means it.
    if value is None or not (value.isascii() and value.isdigit() and len(value) <= 18) or int(value) < minimum:
        kind = "non-negative" if minimum == 0 else "positive"
        raise UsageError(f"{name} must be a {kind} integer, got {value!r}")
    return int(value)


def _at_most(value: int, most: int, name: str) -> int:
    if value > most:
        raise UsageError(f"{name} may be at most {most}, got {value}")
    return value


def _seconds(env: Mapping[str, str], name: str) -> float:
    value = _raw(env, name) or ""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise UsageError(f"{name} must be a positive number of seconds, got {value!r}")
    return number


# config.BUILTIN_SERVERS (config imports dotenv, which this module has no need of); a test checks they agree.
BUILTIN_NAMES = ("dev", "todo", "agent")


def _builtin_names(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    value = _raw(env, name) or ""
    if value.lower() == "none":
        return ()
    names = tuple(part.strip() for part in value.split(",") if part.strip())
    unknown = [part for part in names if part not in BUILTIN_NAMES]
    if unknown:  # a typo would otherwise start no built-in server, silently
        raise UsageError(f"{name}: unknown server {unknown[0]!r} (give {', '.join(BUILTIN_NAMES)} or none)")
    return names


# Model ids and credentials travel in a JSON body and HTTP headers: printable ASCII, no spaces. A key pasted
# with a newline or read from a non-UTF-8 environment otherwise fails far from here (a connection error
# retried four times, or an encoding crash).
_TOKEN = re.compile(r"[\x21-\x7e]+")


def model_id(value: str, where: str) -> str:
    """`value` if it can be a model id; a UsageError naming `where` (the flag or variable) otherwise."""
    if not _TOKEN.fullmatch(value):
        raise UsageError(f"{where} must be a model id (printable ASCII, no spaces), got {value!r}")
    return value


def _credential(env: Mapping[str, str], name: str) -> bool:
    """Whether the key or token is set; a value that cannot be an HTTP header is a UsageError (never echoed)."""
    value = env.get(name, "")
    if value and not _TOKEN.fullmatch(value):
        raise UsageError(f"{name} must be printable ASCII without spaces or line breaks (it is sent as a header)")
    return bool(value)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every environment setting the agent reads, parsed and checked once at start-up."""

    hook_servers: str | None = None  # raw MCP_HOOK_SERVERS; hooks.py parses it
    hook_timeout_ms: int = 2500
    stop_max_rejections: int = 3
    tool_hooks: bool = False  # SPROUT_AGENT_TOOL_HOOKS=1
    pre_tool_max_objections: int | None = None  # None = unlimited
    api_timeout_ms: int = 600_000
    api_waiting_ms: int = 15_000  # the "waiting for the API" notice (model/silence.py): at most 15 s, documented
    server_start_timeout: float = 30.0
    tool_timeout: float = 600.0
    tool_result_max_bytes: int = 51200
    max_parallel_tools: int = 8
    subagent_depth: int = 1
    model: str = DEFAULT_MODEL
    max_output_tokens: int = 32000
    max_context_tokens: int | None = None  # None = from the model table
    compact_threshold: str | None = None  # raw; compaction parses it
    max_compactions: int = 10
    api_key_present: bool = False
    base_url: str | None = None
    builtin_servers: tuple[str, ...] = ("dev", "todo", "agent")
    prices: str | None = None  # raw; ledger.parse_prices reads it
    thinking: str | None = None  # adaptive | on | off; None = from the model's capabilities
    thinking_budget: int = 16000
    effort: str | None = None
    web: bool = False  # the API's web search and fetch offered to the model
    checkpoints: bool = True  # SPROUT_AGENT_CHECKPOINTS: the tree is checkpointed around turns (docs/rewind.md)
    provider: Provider = field(default_factory=Provider)  # CLAUDE_CODE_USE_* and companions (docs/providers.md)
    key_helper: str | None = None  # SPROUT_AGENT_API_KEY_HELPER: a command printing a gateway's key
    key_helper_ttl_ms: int = 300_000  # CLAUDE_CODE_API_KEY_HELPER_TTL_MS

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Read `env` (process environment over .env); a malformed value is a UsageError."""
        context = _raw(env, "SPROUT_AGENT_MAX_CONTEXT_TOKENS")
        has_key, has_token = _credential(env, "ANTHROPIC_API_KEY"), _credential(env, "ANTHROPIC_AUTH_TOKEN")
        return cls(
            hook_servers=env.get("MCP_HOOK_SERVERS"),
            hook_timeout_ms=_int(env, "SPROUT_AGENT_HOOK_TIMEOUT_MS", 1),
            stop_max_rejections=_int(env, "SPROUT_AGENT_STOP_MAX_REJECTIONS", 0),
            tool_hooks=_switch(env, "SPROUT_AGENT_TOOL_HOOKS"),
            pre_tool_max_objections=None
            if _raw(env, "SPROUT_AGENT_PRE_TOOL_MAX_OBJECTIONS") is None
            else _int(env, "SPROUT_AGENT_PRE_TOOL_MAX_OBJECTIONS", 0),
            api_timeout_ms=_int(env, "API_TIMEOUT_MS", 1),
            api_waiting_ms=_at_most(_int(env, "SPROUT_AGENT_API_WAITING_MS", 1), 15_000, "SPROUT_AGENT_API_WAITING_MS"),
            server_start_timeout=_seconds(env, "SPROUT_AGENT_SERVER_START_TIMEOUT"),
            tool_timeout=_seconds(env, "SPROUT_AGENT_TOOL_TIMEOUT"),
            tool_result_max_bytes=_int(env, "SPROUT_AGENT_TOOL_RESULT_MAX_BYTES", 1),
            max_parallel_tools=_int(env, "SPROUT_AGENT_MAX_PARALLEL_TOOLS", 1),
            subagent_depth=_int(env, "SPROUT_AGENT_SUBAGENT_DEPTH", 1),
            model=model_id(_raw(env, "ANTHROPIC_MODEL") or DEFAULT_MODEL, "ANTHROPIC_MODEL"),
            max_output_tokens=_int(env, "SPROUT_AGENT_MAX_OUTPUT_TOKENS", 1),
            max_context_tokens=None if context is None else _int(env, "SPROUT_AGENT_MAX_CONTEXT_TOKENS", 1),
            compact_threshold=_raw(env, "SPROUT_AGENT_COMPACT_THRESHOLD"),
            max_compactions=_int(env, "SPROUT_AGENT_MAX_COMPACTIONS", 0),
            api_key_present=has_key or has_token,
            base_url=checked_url(env, "ANTHROPIC_BASE_URL"),
            builtin_servers=_builtin_names(env, "SPROUT_AGENT_BUILTIN_SERVERS"),
            prices=_raw(env, "SPROUT_AGENT_PRICES"),
            thinking=choice(_raw(env, "SPROUT_AGENT_THINKING"), THINKING_SETTINGS, "SPROUT_AGENT_THINKING"),
            thinking_budget=_int(env, "SPROUT_AGENT_THINKING_BUDGET", 1024),
            effort=choice(_raw(env, "SPROUT_AGENT_EFFORT"), EFFORT_LEVELS, "SPROUT_AGENT_EFFORT"),
            web=_switch(env, "SPROUT_AGENT_WEB"),
            checkpoints=_switch(env, "SPROUT_AGENT_CHECKPOINTS"),
            provider=choose(env),
            key_helper=_raw(env, "SPROUT_AGENT_API_KEY_HELPER"),
            key_helper_ttl_ms=_int(env, "CLAUDE_CODE_API_KEY_HELPER_TTL_MS", 1),
        )


# Claude Code's model aliases (a subagent definition's `model`), each overridable by Claude Code's own variable.
MODEL_ALIASES = {
    "haiku": ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-5-5"),
    "sonnet": ("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-5-5"),
    "opus": ("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-5-5"),
}


def resolve_model_alias(name: str, env: Mapping[str, str], where: str = "a subagent's model") -> str:
    """`haiku`, `sonnet`, `opus` → a model id (the variable's, else ours); any other name is taken as an id."""
    alias = MODEL_ALIASES.get(name.lower())
    if alias is None:
        return model_id(name, where)
    variable, default = alias
    return model_id(env.get(variable) or default, variable)


def provider_model(name: str, env: Mapping[str, str], provider: Provider, where: str = "a subagent's model") -> str:
    """An alias or id (--model, ANTHROPIC_MODEL, /model, a subagent's `model`) as the chosen provider names it:
    `sonnet` on Bedrock is the Sonnet inference profile of AWS_REGION's geography (config/provider.py)."""
    return native_model(resolve_model_alias(name, env, where), provider)


# ---------------------------------------------------------------- MCP child environment

# What an MCP server inherits from us. Enough to find programs, home, locale, temp dirs and proxies,
# on POSIX and Windows. VIRTUAL_ENV is left out on purpose: our venv is not the server's (uv and
# python tools misbehave when it points elsewhere); PATH still carries an activated venv's bin.
_INHERITED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TMPDIR", "TMP", "TEMP", "TZ",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR",
    "APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATHEXT", "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE", "SYSTEMROOT", "USERNAME", "USERPROFILE", "COMSPEC", "WINDIR",
})  # fmt: skip
_INHERITED_PREFIXES = ("LC_", "XDG_")


def serves_without_a_key(base_url: str | None) -> bool:
    """A run needs no key only for an API on this machine's loopback (a local proxy or model server): a gateway
    elsewhere without one was sent `Bearer none`, retried, and the run ended with exit 1 instead of 2."""
    if base_url is None:
        return False
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    import ipaddress  # ~2 ms, only for a base URL with no key

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def child_environment(parent: Mapping[str, str], server_env: Mapping[str, str]) -> dict[str, str]:
    """The environment an MCP server starts with: the `_INHERITED` part of `parent` (never a
    secret-looking name such as ANTHROPIC_API_KEY or *TOKEN*) plus the server's own `env`, which wins."""
    inherited = {
        key: value
        for key, value in parent.items()
        if (key in _INHERITED or key.startswith(_INHERITED_PREFIXES))
        and not is_secret(key, value)
        and not value.startswith("()")  # exported bash functions
    }
    return inherited | dict(server_env)
