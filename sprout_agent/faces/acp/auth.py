"""What `initialize` says about logging in (`authMethods`), and `authenticate`: sprout-agent has no login of its own;
it reads ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) from its environment or the project's `.env`, or runs the
`apiKeyHelper` of a settings file. One method says so to clients that can set a variable for it (`env_var`, the one
Harbor's ACP runner picks when the key is set); the other (`agent`, which the ACP registry requires) lets a client
ask whether the agent has what it needs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sprout_agent.core.errors import MissingCredential, SproutError
from sprout_agent.faces.acp.wire import INTERNAL_ERROR, INVALID_PARAMS, Json, RpcError

if TYPE_CHECKING:
    from sprout_agent.config.credential_commands import CredentialCommands
    from sprout_agent.config.locations import Locations
    from sprout_agent.config.settings import Settings

AUTH_REQUIRED = -32000  # ACP's "Authentication required"
KEY_METHOD = "anthropic-api-key"
ENVIRONMENT_METHOD = "environment"
KEYS_URL = "https://console.anthropic.com/settings/keys"
_HOW = (
    "Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN with ANTHROPIC_BASE_URL for a gateway) where the editor starts "
    "sprout-agent, or in the project's .env"
)

AUTH_METHODS: list[Json] = [
    {
        "id": KEY_METHOD,
        "name": "Anthropic API key",
        "description": "The key sprout-agent sends to the Anthropic API, in ANTHROPIC_API_KEY.",
        "type": "env_var",
        "vars": [{"name": "ANTHROPIC_API_KEY", "label": "Anthropic API key", "secret": True}],
        "link": KEYS_URL,
    },
    {
        "id": ENVIRONMENT_METHOD,
        "name": "Key from the environment",
        "description": f"sprout-agent reads its credentials itself. {_HOW}.",
        "type": "agent",
    },
]


def authenticate(params: Json, environ: Mapping[str, str], locations: Locations) -> Json:
    """`{}` when this process's environment holds what a session needs (a key or token, a key helper, a cloud
    provider, or an API on this machine's loopback: the same check as session/new's); else Authentication required,
    saying what to set. A session's project `.env` can still supply a key at session/new."""
    # The sessions' machinery loads with the first session, or here: initialize is answered before it.
    from sprout_agent.config.settings import Settings
    from sprout_agent.session.prepared import check_credentials

    method = params.get("methodId")
    if method not in (KEY_METHOD, ENVIRONMENT_METHOD):
        raise RpcError(INVALID_PARAMS, f"Invalid params: unknown methodId {method!r}")
    try:
        settings = Settings.from_env(environ)
        check_credentials(settings, _your_commands(settings, environ, locations))
    except MissingCredential as error:
        raise auth_required(error) from None
    except SproutError as error:  # a malformed setting: said as session/new says it (never echoing a key)
        raise RpcError(INTERNAL_ERROR, str(error)) from None
    return {}


def _your_commands(settings: Settings, environ: Mapping[str, str], locations: Locations) -> CredentialCommands:
    """The credential commands (an apiKeyHelper…) of your own and the managed settings files, as session/new would
    choose them: authenticate comes before any session, so no project's files are known yet (a project's command
    still counts at session/new, once approved)."""
    from sprout_agent.config.applied_settings import apply
    from sprout_agent.config.claude_settings import Places, load_settings
    from sprout_agent.config.consent import Verdict
    from sprout_agent.config.credential_commands import CredentialCommands, choose

    home = Path(environ["HOME"]) if environ.get("HOME") else None
    if home is None:
        return CredentialCommands()
    found = load_settings(Places(home, home, locations.config, locations.managed_settings), "user")
    applied = apply(found, lambda _file, _print: Verdict.UNKNOWN, cwd=home, home=home, run_mode="default")
    return choose(applied.commands, environ, settings.provider, settings.api_key_present)


def auth_required(error: MissingCredential) -> RpcError:
    """A session that cannot start without a credential, as ACP's Authentication required (the client then offers
    `authMethods`)."""
    return RpcError(AUTH_REQUIRED, f"Authentication required: {error}")
