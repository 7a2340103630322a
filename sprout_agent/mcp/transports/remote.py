"""A remote MCP server's transport: the mcp SDK's Streamable HTTP or HTTP+SSE client over httpx2.

Loaded only when a remote server is configured (httpx2 and the SDK's HTTP client cost import time a
stdio-only run should not pay). Leaving the context ends the HTTP streams (and, for Streamable HTTP, sends
the session's DELETE); there is no process to kill. What a server sends is held to the stdio cap: each answer's
body by http_cap.py, each event of a Streamable HTTP stream by the SDK's own limit, set to the same figure.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from sprout_agent.config.files import ServerConfig
from sprout_agent.core.errors import NeedsLogin, ServerGone
from sprout_agent.mcp.oauth.store import OAuthSetup
from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES
from sprout_agent.mcp.transports.http_cap import cap_body, capped_headers

# The SDK names its stream types only in private modules (mcp.client._transport): ClientSession takes them.
Streams = tuple[Any, Any]

# How long the server may take between two bytes of one answer or event stream: tool calls run under the
# pool's own tool timeout, so this only has to outlast a quiet stream (the SDK's default).
_READ_SECONDS = 300.0


@asynccontextmanager
async def open_http(
    config: ServerConfig, timeout: float, refused: list[Exception], oauth: OAuthSetup | None = None
) -> AsyncGenerator[Streams]:
    """The session streams of a Streamable HTTP server at `config.url`; connecting and each request's send are
    bounded by `timeout`. `refused` gets the error for each HTTP error answer of the endpoint: the Streamable HTTP
    client turns a 401 into a JSON-RPC error that no longer says so. With `oauth`, stored tokens authorize the
    requests."""
    url, headers, auth, note = await _endpoint(config, refused, oauth)
    limits = httpx2.Timeout(timeout, read=_READ_SECONDS)
    # Redirects stay off (httpx2's default): the SDK follows only those that keep to the endpoint's origin.
    client = httpx2.AsyncClient(headers=headers, timeout=limits, auth=auth, event_hooks={"response": [note, cap_body]})
    async with (
        client,
        streamable_http_client(url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES) as (read, write),
    ):
        yield read, write


@asynccontextmanager
async def open_sse(
    config: ServerConfig, timeout: float, refused: list[Exception], oauth: OAuthSetup | None = None
) -> AsyncGenerator[Streams]:
    """The session streams of an HTTP+SSE server at `config.url`, as `open_http` gives them."""
    url, headers, auth, note = await _endpoint(config, refused, oauth)

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        hooks = {"response": [note, cap_body]}
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks)

    # Its events are capped by the SDK at 1 MiB (mcp 2.3.0's sse_client passes no limit of its own to
    # httpx2's parser), and one over it ends the connection: docs/security.md says so.
    async with sse_client(
        url,
        headers=headers,
        timeout=timeout,
        sse_read_timeout=_READ_SECONDS,
        httpx_client_factory=factory,
        auth=auth,
    ) as (read, write):
        yield read, write


async def _endpoint(
    config: ServerConfig, refused: list[Exception], oauth: OAuthSetup | None
) -> tuple[str, dict[str, str], httpx2.Auth | None, Callable[[httpx2.Response], Awaitable[None]]]:
    """What both transports send to: the URL, the capped headers, the auth (with `oauth`), and the response hook
    that fills `refused`."""
    assert config.url is not None  # ServerConfig holds a remote transport to its url
    auth: httpx2.Auth | None = None
    if oauth is not None:
        from sprout_agent.mcp.oauth import provider as oauth_flow  # the SDK's auth pieces only when tokens can exist

        auth = await oauth_flow.for_session(config, oauth, refused)
    endpoint = httpx2.URL(config.url)

    # Only the endpoint's own answers: the OAuth discovery's 404s on the way are no reason to report.
    async def note(response: httpx2.Response) -> None:
        # With an auth, a 401 starts its flow, which reports for itself when it cannot finish.
        if (
            response.status_code >= 400
            and response.request.url == endpoint
            and not (auth and response.status_code == 401)
        ):
            challenge = response.headers.get("www-authenticate", "")
            refused.append(refusal(config, response.status_code, response.reason_phrase, challenge))

    return config.url, capped_headers(config.headers), auth, note


def refusal(config: ServerConfig, status: int, phrase: str, challenge: str = "") -> ServerGone:
    """A 401 with a Bearer challenge (what an OAuth-protected MCP server sends), to a server whose headers carry
    no Authorization of their own, means it wants an OAuth login; any other refusal is about the headers."""
    bearer = challenge.strip().lower().startswith("bearer")
    if status == 401 and bearer and not any(name.lower() == "authorization" for name in config.headers):
        from sprout_agent.mcp.oauth.provider import needs_login_line

        return NeedsLogin(needs_login_line(config.name))
    return ServerGone(_status_line(status, phrase))


def failure(leaf: BaseException) -> str | None:
    """One line for an HTTP failure (refused, no such host, a 4xx/5xx answer), or None for anything else."""
    if isinstance(leaf, httpx2.HTTPStatusError):
        return _status_line(leaf.response.status_code, leaf.response.reason_phrase)
    if isinstance(leaf, httpx2.TimeoutException):
        return "no answer from the server (HTTP timeout)"
    if isinstance(leaf, httpx2.SSEError):  # the HTTP+SSE transport's stream: one event over its 1 MiB, say
        return f"its event stream failed: {leaf}"
    if isinstance(leaf, httpx2.HTTPError):
        return f"cannot reach the server: {leaf or type(leaf).__name__}"
    return None


def _status_line(status: int, phrase: str) -> str:
    hint = " (it wants credentials: check its headers)" if status in (401, 403) else ""
    return f"the server answered HTTP {status} {phrase}".rstrip() + hint
