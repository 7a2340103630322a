"""Logging in to a remote MCP server: the authorization code flow with a browser and a localhost callback (or
the test redirect), run outside a session's start-up; the tokens land in the store for the next connect.

The callback listens on 127.0.0.1 only, takes one request carrying `code` and `state` (the SDK checks the
state), answers a short page and closes; the whole wait is bounded.
"""

from __future__ import annotations

import os
import sys
import urllib.parse
import webbrowser
from collections.abc import Callable
from typing import assert_never

import anyio
import anyio.abc
import anyio.streams.stapled
import anyio.to_thread
import httpx2
from mcp.shared.auth import AuthorizationCodeResult

from sprout_agent.config.files import ServerConfig
from sprout_agent.core.errors import SproutError
from sprout_agent.mcp.oauth.provider import (
    CALLBACK_PATH,
    Callback,
    Redirect,
    code_from,
    make_provider,
    preset,
    storage_for,
)
from sprout_agent.mcp.oauth.store import OAuthSetup
from sprout_agent.mcp.transports.http_cap import cap_body, capped_headers
from sprout_agent.trust.untrusted import printable

LOGIN_WAIT = 300.0  # seconds for the person to finish in the browser
_HTTP_SECONDS = 30.0
_PAGE = b"<!doctype html><title>sprout-agent</title><p>%s You can close this tab and return to the terminal."
_REQUEST_BYTES = 8192


class _Catcher:
    """The one request the browser sends back to the redirect URI."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | SproutError | None = None
        self.arrived = anyio.Event()

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            request = b""
            with anyio.move_on_after(10):
                while b"\r\n\r\n" not in request and len(request) < _REQUEST_BYTES:
                    request += await stream.receive(_REQUEST_BYTES)
            target = request.split(b" ", 2)[1].decode("latin-1") if request.count(b" ") >= 2 else ""
            path, _, query = target.partition("?")
            if path != CALLBACK_PATH or self.arrived.is_set():
                await stream.send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            try:
                self.result = code_from(query)
                said = b"Logged in."
            except SproutError as error:
                self.result, said = error, b"Login failed."
            page = _PAGE % said
            head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(page)}\r\n"
            head += "Connection: close\r\n\r\n"
            await stream.send(head.encode() + page)
            self.arrived.set()


def _browser(
    catcher: _Catcher, say: Callable[[str], None], open_browser: bool, wait: float
) -> tuple[Redirect, Callback]:
    async def redirect(url: str) -> None:
        # The URL comes from the server's metadata: shown made printable, and opened only as a URL.
        say(f"open this URL to log in: {printable(url)}")
        if open_browser and _has_browser() and url.startswith(("https://", "http://")):
            await anyio.to_thread.run_sync(webbrowser.open, url)

    async def callback() -> AuthorizationCodeResult:
        with anyio.move_on_after(wait):
            await catcher.arrived.wait()
        result = catcher.result
        if result is None:
            raise SproutError(f"no login within {wait:g} s")
        if isinstance(result, SproutError):
            raise result
        return result

    return redirect, callback


def _has_browser() -> bool:
    """Not on a console without a display: webbrowser would pick a text browser and take over the terminal."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("BROWSER"))


async def _listen(port: int) -> anyio.streams.stapled.MultiListener[anyio.abc.SocketStream]:
    return await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)


async def login(
    config: ServerConfig, setup: OAuthSetup, say: Callable[[str], None], *, wait: float = LOGIN_WAIT
) -> None:
    """Runs the whole flow against `config.url` and stores the tokens; raises SproutError saying why not."""
    assert config.url is not None
    storage = storage_for(setup.store, config.url, None)
    record = await storage.record()
    record.pop("tokens", None)  # a login asks afresh; the stored tokens stay until new ones arrive
    configured = config.oauth.callback_port if config.oauth is not None else None
    registered = registered_port(record)
    try:
        listener = await _listen(configured or registered or 0)
    except OSError as error:
        if configured is not None:
            raise SproutError(f"cannot listen on 127.0.0.1:{configured} (oauth.callbackPort): {error}") from error
        listener = await _listen(0)
    port = int(listener.listeners[0].extra(anyio.abc.SocketAttribute.local_port))
    if registered is not None and port != registered:
        await storage.forget_client()  # registered for another redirect URI: register again
    redirect_uri = f"http://localhost:{port}{CALLBACK_PATH}"
    catcher = _Catcher()
    storage = storage_for(setup.store, config.url, preset(config, redirect_uri), record)
    if setup.flow == "test":
        from sprout_agent.mcp.oauth.provider import test_redirect

        handlers = test_redirect(config)
    else:
        handlers = _browser(catcher, say, setup.open_browser, wait)
    auth = make_provider(config, storage, redirect_uri, handlers)
    async with listener, anyio.create_task_group() as group:  # the serving task ends before the socket closes
        group.start_soon(listener.serve, catcher.handle)
        try:
            await _touch(config, auth)
        finally:
            group.cancel_scope.cancel()


async def _touch(config: ServerConfig, auth: httpx2.Auth) -> None:
    """One request the server must authorize: its 401 starts the flow; a success means the tokens work."""
    assert config.url is not None
    hooks = {"response": [cap_body]}  # the answer is read whole: held to the cap, like a session's
    async with httpx2.AsyncClient(
        headers=capped_headers(config.headers), timeout=_HTTP_SECONDS, auth=auth, event_hooks=hooks
    ) as client:
        match config.transport:
            case "sse":
                async with client.stream("GET", config.url, headers={"Accept": "text/event-stream"}) as answer:
                    status = answer.status_code
            case "http":
                answer = await client.post(config.url, json=_INITIALIZE, headers={"Accept": _ACCEPT})
                status = answer.status_code
                session = answer.headers.get("mcp-session-id")
                if session is not None and status < 400:  # end the session the handshake opened
                    await client.delete(config.url, headers={"mcp-session-id": session})
            case "stdio" | "in-process" | "sdk":
                raise AssertionError(f"server '{config.name}' is not remote: it has no login")
            case _:
                assert_never(config.transport)
    if status >= 400:
        raise SproutError(f"the server still answers HTTP {status} after the login")


_ACCEPT = "application/json, text/event-stream"
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "sprout-agent", "version": "login"},
    },
}


def registered_port(record: dict[str, object]) -> int | None:
    from sprout_agent.mcp.oauth.provider import registered_redirect

    uri = registered_redirect(record)
    return urllib.parse.urlsplit(uri).port if uri is not None else None
