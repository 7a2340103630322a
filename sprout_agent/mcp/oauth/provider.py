"""OAuth 2.1 for remote MCP servers: the mcp SDK's `OAuthClientProvider` over our token store, and the ways to
finish its authorization step (never at start-up; the browser with a localhost callback; the test redirect).

The SDK does the protocol (protected resource metadata, authorization server metadata, dynamic registration
or a client ID metadata document, PKCE, the `resource` parameter, scopes and step-up, refresh). Loaded only
on the remote path. Tokens go to the store and into request headers, nowhere else: no message here holds one.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, cast

import anyio
import anyio.to_thread
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl, ValidationError

from sprout_agent.config.files import ServerConfig
from sprout_agent.core.errors import NeedsLogin, ServerGone, SproutError
from sprout_agent.mcp.oauth.store import OAuthSetup, TokenStore

# The callback path Claude Code registers (`http://localhost:PORT/callback`): a pre-registered client
# (`oauth.clientId` + `oauth.callbackPort`) set up for Claude Code then works here unchanged.
CALLBACK_PATH = "/callback"


def needs_login_line(name: str) -> str:
    return f"needs login: run `sprout-agent mcp login {name}`"


class _Storage:
    """The SDK's `TokenStorage` over one record of our store; the store's calls (a keyring may block on D-Bus)
    run in a thread."""

    def __init__(
        self,
        store: TokenStore,
        url: str,
        preset: OAuthClientInformationFull | None,
        record: dict[str, Any] | None = None,
    ) -> None:
        self._store, self._url, self._preset = store, url, preset
        self._record = record

    async def record(self) -> dict[str, Any]:
        if self._record is None:
            self._record = await anyio.to_thread.run_sync(self._store.load, self._url) or {}
        return self._record

    async def _save(self) -> None:
        record = await self.record()
        await anyio.to_thread.run_sync(self._store.save, self._url, record)

    async def get_tokens(self) -> OAuthToken | None:
        raw = (await self.record()).get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self.record()
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        # The SDK keeps the expiry in memory only: stored, it lets the next run refresh instead of failing.
        record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        await self._save()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._preset is not None:
            return self._preset
        raw = (await self.record()).get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = await self.record()
        record["client"] = client_info.model_dump(mode="json", exclude_none=True)
        await self._save()

    async def forget_client(self) -> None:
        (await self.record()).pop("client", None)


def storage_for(
    store: TokenStore, url: str, preset: OAuthClientInformationFull | None, record: dict[str, Any] | None = None
) -> _Storage:
    return _Storage(store, url, preset, record)


class _Provider(OAuthClientProvider):
    """The SDK's provider; it also loads the stored expiry, and records why a flow failed (the transport
    turns the error into a JSON-RPC one that no longer says)."""

    failures: list[Exception] | None = None

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        inner = super()._auth_flow(request)
        try:
            outgoing = await inner.__anext__()
            while True:
                response = yield outgoing
                outgoing = await inner.asend(response)
        except StopAsyncIteration:
            return
        except NeedsLogin:
            raise
        except Exception as error:
            if self.failures is not None:  # the SDK's messages name endpoints and statuses, never a token
                text = (str(error) or type(error).__name__).splitlines()[0][:300]
                self.failures.append(ServerGone(f"OAuth failed: {text}"))
            raise
        finally:
            await inner.aclose()

    async def _initialize(self) -> None:
        await super()._initialize()
        storage = self.context.storage
        if isinstance(storage, _Storage):
            expires_at = (await storage.record()).get("expires_at")
            self.context.token_expiry_time = float(expires_at) if isinstance(expires_at, int | float) else None


Redirect = Callable[[str], Awaitable[None]]
Callback = Callable[[], Awaitable[AuthorizationCodeResult]]


def preset(config: ServerConfig, redirect: str) -> OAuthClientInformationFull | None:
    oauth = config.oauth
    if oauth is None or oauth.client_id is None:
        return None
    method = "client_secret_basic" if oauth.client_secret else "none"
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=oauth.client_secret,
        token_endpoint_auth_method=method,
        redirect_uris=[AnyUrl(redirect)],
    )


def make_provider(
    config: ServerConfig,
    storage: _Storage,
    redirect: str,
    handlers: tuple[Redirect, Callback],
    failures: list[Exception] | None = None,
) -> httpx2.Auth:
    assert config.url is not None
    oauth = config.oauth
    metadata = OAuthClientMetadata(
        client_name="sprout-agent",
        redirect_uris=[AnyUrl(redirect)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=oauth.scopes if oauth is not None else None,
    )
    provider = _Provider(
        config.url,
        metadata,
        storage,
        redirect_handler=handlers[0],
        callback_handler=handlers[1],
        client_metadata_url=oauth.client_metadata_url if oauth is not None else None,
    )
    provider.failures = failures
    return provider


async def for_session(config: ServerConfig, setup: OAuthSetup, refused: list[Exception]) -> httpx2.Auth | None:
    """The auth of a session's connection: stored tokens (refreshed when they expire); the authorization step
    only with the test redirect. None when nothing is stored: a 401 then says "needs login"."""
    assert config.url is not None
    port = config.oauth.callback_port if config.oauth is not None else None
    record = await _Storage(setup.store, config.url, None).record()
    if setup.flow == "test":
        redirect = _redirect_uri(port or _free_port())
        storage = _Storage(setup.store, config.url, preset(config, redirect), record)
        return make_provider(config, storage, redirect, test_redirect(config), refused)
    if not record.get("tokens"):
        return None
    redirect = registered_redirect(record) or _redirect_uri(port or 0)
    storage = _Storage(setup.store, config.url, preset(config, redirect), record)

    async def cannot(url: str) -> None:
        # A person must approve (the tokens were revoked, or the server wants more scope): not mid-run.
        refused.append(NeedsLogin(needs_login_line(config.name)))
        raise NeedsLogin(needs_login_line(config.name))

    async def never() -> AuthorizationCodeResult:
        raise NeedsLogin(needs_login_line(config.name))

    return make_provider(config, storage, redirect, (cannot, never), refused)


def test_redirect(config: ServerConfig) -> tuple[Redirect, Callback]:
    """Test only (SPROUT_AGENT_OAUTH_TEST_REDIRECT=1): what a browser that approves at once would do. It GETs the
    authorization URL without following the redirect and reads `code` and `state` from its Location."""
    got: list[AuthorizationCodeResult] = []

    async def redirect(url: str) -> None:
        async with httpx2.AsyncClient(timeout=30.0) as client:
            answer = await client.get(url)
        location = answer.headers.get("location")
        if answer.status_code not in (301, 302, 303, 307, 308) or not location:
            raise SproutError(f"the authorization server answered HTTP {answer.status_code}, not a redirect")
        got.append(code_from(urllib.parse.urlsplit(location).query))

    async def callback() -> AuthorizationCodeResult:
        if not got:
            raise SproutError("the authorization redirect carried no code")
        return got.pop()

    return redirect, callback


def code_from(query: str) -> AuthorizationCodeResult:
    values = urllib.parse.parse_qs(query)
    if "error" in values:
        raise SproutError(f"authorization refused: {values['error'][0][:100]}")
    if "code" not in values:
        raise SproutError("the authorization redirect carried no code")
    first: Callable[[str], str | None] = lambda key: values[key][0] if key in values else None  # noqa: E731
    code = first("code")
    assert code is not None
    return AuthorizationCodeResult(code=code, state=first("state"), iss=first("iss"))


def _redirect_uri(port: int) -> str:
    return f"http://localhost:{port}{CALLBACK_PATH}"


def registered_redirect(record: dict[str, Any]) -> str | None:
    client: object = record.get("client")
    uris: object = cast(dict[str, object], client).get("redirect_uris") if isinstance(client, dict) else None
    return str(cast(list[object], uris)[0]) if isinstance(uris, list) and uris else None


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
