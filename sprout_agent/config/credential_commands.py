"""Which commands of yours fetch or refresh the provider's credentials: Claude Code's settings `apiKeyHelper`,
`awsAuthRefresh`, `awsCredentialExport` and `gcpAuthRefresh`, and our SPROUT_AGENT_API_KEY_HELPER. Decided here,
run by model/key_helper.py; a repository's file gives them only after consent (applied_settings.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sprout_agent.config.provider import Provider

# The settings keys that name a command, and the provider each serves (None: the Anthropic API or a gateway).
SETTINGS_KEYS: dict[str, str] = {
    "apiKeyHelper": "anthropic",
    "awsAuthRefresh": "bedrock",
    "awsCredentialExport": "bedrock",
    "gcpAuthRefresh": "vertex",
}
ENV_HELPER = "SPROUT_AGENT_API_KEY_HELPER"


@dataclass(frozen=True, slots=True)
class Command:
    """A command that fetches or refreshes credentials, and where it was set (messages name both, never output)."""

    setting: str  # apiKeyHelper, awsCredentialExport, …, or SPROUT_AGENT_API_KEY_HELPER
    command: str
    source: str = ""  # the settings file as shown; "" for the environment

    @property
    def named(self) -> str:
        return f"{self.setting} ({self.source})" if self.source else self.setting


@dataclass(frozen=True, slots=True)
class CredentialCommands:
    """The commands this run may use; None where nothing is set (or the provider is not theirs)."""

    key_helper: Command | None = None  # prints the Anthropic API's (or a gateway's) key
    aws_refresh: Command | None = None  # refreshes ~/.aws (aws sso login): its output is shown to you
    aws_export: Command | None = None  # prints AWS credentials as JSON: captured, never shown
    gcp_refresh: Command | None = None  # refreshes Google's credentials (gcloud auth application-default login)

    @property
    def refresh(self) -> Command | None:
        """The command that refreshes the cloud's own credential files, run once after a 401/403."""
        return self.aws_refresh or self.gcp_refresh


def choose(
    from_settings: Mapping[str, tuple[str, str]], env: Mapping[str, str], provider: Provider, key_present: bool
) -> CredentialCommands:
    """The commands for `provider`. `from_settings`: each key's (command, file) from the highest applied file.
    SPROUT_AGENT_API_KEY_HELPER (your environment or your own files: a repository may not set it) wins; the
    settings' apiKeyHelper comes after ANTHROPIC_AUTH_TOKEN and ANTHROPIC_API_KEY, as in Claude Code."""

    def command(key: str) -> Command | None:
        found = from_settings.get(key)
        if found is None or SETTINGS_KEYS[key] != provider.kind:
            return None
        return Command(key, found[0], found[1])

    env_helper = env.get(ENV_HELPER, "").strip()
    helper = Command(ENV_HELPER, env_helper) if env_helper and provider.kind == "anthropic" else None
    if helper is None and not key_present:
        helper = command("apiKeyHelper")
    aws = command("awsAuthRefresh"), command("awsCredentialExport")
    return CredentialCommands(helper, *aws, command("gcpAuthRefresh"))
