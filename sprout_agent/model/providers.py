"""The SDK client for the chosen provider (config/provider.py): Anthropic's, or the SDK's own Bedrock, Vertex or Foundry
client, each imported only when chosen; and what renews a provider's credentials after a 401 or 403."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from sprout_agent.config.provider import Provider
from sprout_agent.model.entra import EntraToken, token_source


def async_client(
    provider: Provider,
    *,
    api_key: str | None,
    env: Mapping[str, str],
    timeout: float,
    http_client: Any = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """The client for `provider`, with no retries of its own (ours emit events) and no spans of its own (ours are
    the request's): the first party's takes the key, the clouds' clients find their own credentials (the AWS chain,
    Google's application default credentials) as the SDK documents, unless `options` gives them (awsCredentialExport's
    keys, model/credentials.py)."""
    import anthropic

    common: dict[str, Any] = {
        "max_retries": 0,
        "timeout": anthropic.Timeout(timeout, connect=min(10.0, timeout)),  # API_TIMEOUT_MS, as Claude Code's
        "open_telemetry": {"traces": False, "propagation": False},
    }
    if http_client is not None:  # --record / --replay: every request through the cassette (model/cassettes/)
        common["http_client"] = http_client
    common |= options or {}
    if provider.kind == "bedrock":
        return _bedrock(provider, common)
    if provider.kind == "vertex":
        return _vertex(provider, common)
    if provider.kind == "foundry":
        return _foundry(provider, env, common)
    return anthropic.AsyncAnthropic(base_url=provider.base_url, **first_party_auth(api_key, env), **common)


def first_party_auth(api_key: str | None, env: Mapping[str, str]) -> dict[str, Any]:
    """The key as the SDK sends it; with both ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN set, both, as Claude Code
    sends them (seen from its binary): the token as `Authorization: Bearer`, the key as `X-Api-Key`. A helper's key
    (a key that is not ANTHROPIC_API_KEY's) goes alone: the helper wins over both."""
    token, key = env.get("ANTHROPIC_AUTH_TOKEN"), env.get("ANTHROPIC_API_KEY")
    if not token or not key or api_key != key:
        return {"api_key": api_key}
    return {"api_key": None, "auth_token": token, "default_headers": {"X-Api-Key": key}}


def _foundry(provider: Provider, env: Mapping[str, str], common: dict[str, Any]) -> Any:
    """The SDK's Foundry client with Claude Code's order: ANTHROPIC_FOUNDRY_API_KEY, else ANTHROPIC_FOUNDRY_AUTH_TOKEN
    (a bearer token), else nothing (CLAUDE_CODE_SKIP_FOUNDRY_AUTH: a gateway in front), else Entra ID."""
    from anthropic.lib.foundry import AsyncAnthropicFoundry

    class Unauthenticated(AsyncAnthropicFoundry):
        """CLAUDE_CODE_SKIP_FOUNDRY_AUTH: no key and no token are added (the SDK's Foundry client adds one)."""

        async def _prepare_options(self, options: Any) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
            return await super(AsyncAnthropicFoundry, self)._prepare_options(options)

    where = {"base_url": provider.base_url} if provider.base_url else {"resource": provider.resource}
    if key := env.get("ANTHROPIC_FOUNDRY_API_KEY"):
        return AsyncAnthropicFoundry(api_key=key, **where, **common)
    if token := env.get("ANTHROPIC_FOUNDRY_AUTH_TOKEN"):
        return AsyncAnthropicFoundry(azure_ad_token_provider=token_source(token), **where, **common)
    if provider.skip_auth:
        return Unauthenticated(azure_ad_token_provider=token_source("unused"), **where, **common)
    return AsyncAnthropicFoundry(azure_ad_token_provider=EntraToken(), **where, **common)


def _bedrock(provider: Provider, common: dict[str, Any]) -> Any:
    from anthropic.lib.bedrock import AsyncAnthropicBedrock

    class Unsigned(AsyncAnthropicBedrock):
        """CLAUDE_CODE_SKIP_BEDROCK_AUTH: a gateway in front of Bedrock signs the request, so nothing is added."""

        async def _prepare_request(self, request: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            return None

    chosen = Unsigned if provider.skip_auth else AsyncAnthropicBedrock
    # AWS_BEARER_TOKEN_BEDROCK and the credential chain (AWS_PROFILE, SSO, keys, roles) are read by the SDK and
    # botocore from the real environment, where a project's .env cannot put them (guarded_env.py).
    return chosen(aws_region=provider.region, base_url=provider.base_url, **common)


def _vertex(provider: Provider, common: dict[str, Any]) -> Any:
    from anthropic.lib.vertex import AsyncAnthropicVertex

    class Unauthenticated(AsyncAnthropicVertex):
        """CLAUDE_CODE_SKIP_VERTEX_AUTH: a gateway in front of Vertex authenticates instead; no token is asked for."""

        async def _prepare_request(self, request: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            return None

    chosen = Unauthenticated if provider.skip_auth else AsyncAnthropicVertex
    project: dict[str, Any] = {"project_id": provider.project} if provider.project else {}
    return chosen(region=provider.region or "", base_url=provider.base_url, **project, **common)


def regional(client: Any, provider: Provider, model: str) -> Any:
    """The client for `model`: on Vertex, one in its VERTEX_REGION_CLAUDE_… region when that is not the default."""
    region = provider.region_for(model)
    if provider.kind != "vertex" or region == provider.region:
        return client
    return client.with_options(region=region)


def renew(client: Any, provider: Provider) -> bool:
    """After a 401 or 403: drops the credentials the client holds so the next request fetches them anew (the AWS
    chain re-read, Google's credentials reloaded); False when the provider has nothing to renew."""
    if provider.skip_auth:
        return False
    if provider.kind == "bedrock" and getattr(client, "api_key", None) is None:
        # The SDK keeps one boto3 session per set of arguments; a new one reads the profile, SSO cache and keys again.
        auth = importlib.import_module("anthropic.lib.aws._auth")
        cached = getattr(auth, "_get_session", None)
        clear = getattr(cached, "cache_clear", None)
        if callable(clear):
            clear()
            return True
        return False
    if provider.kind == "vertex" and getattr(client, "access_token", None) is None:
        client.credentials = None  # application default credentials loaded and refreshed again
        return True
    entra = getattr(client, "_azure_ad_token_provider", None)
    if provider.kind == "foundry" and isinstance(entra, EntraToken):
        entra.renew()  # Entra ID: a new credential's token (a static key or token has nothing to renew)
        return True
    return False
