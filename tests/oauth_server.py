"""An OAuth-protected MCP server in the test's process: an mcp-SDK server behind a hand-built resource server and
authorization server (RFC 9728 metadata, RFC 8414 metadata, dynamic registration, PKCE S256, the `resource`
parameter, refresh). Strict like a real one: a wrong verifier, resource or redirect URI is refused."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import socket
import urllib.parse
from collections.abc import AsyncGenerator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]


@dataclass
class AuthServer:
    base: str = ""
    expires_in: int = 3600
    grants: list[str] = field(default_factory=list[str])  # grant_type of each token request, in order
    registrations: int = 0
    tokens: set[str] = field(default_factory=set[str])  # access tokens that are valid now
    refresh: set[str] = field(default_factory=set[str])
    _codes: dict[str, tuple[str, str, str]] = field(default_factory=dict[str, tuple[str, str, str]])
    _clients: dict[str, list[str]] = field(default_factory=dict[str, list[str]])

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def metadata(self, path: str) -> dict[str, Any] | None:
        if path == "/.well-known/oauth-protected-resource/mcp":
            return {"resource": self.url, "authorization_servers": [self.base]}
        if path == "/.well-known/oauth-authorization-server":
            return {
                "issuer": self.base,
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "registration_endpoint": f"{self.base}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            }
        return None

    def register(self, body: dict[str, Any]) -> dict[str, Any]:
        self.registrations += 1
        client = f"client-{self.registrations}"
        self._clients[client] = list(body["redirect_uris"])
        return {**body, "client_id": client, "token_endpoint_auth_method": "none"}

    def authorize(self, query: dict[str, str]) -> str:
        """The Location of the redirect back, as a person approving at once would get it."""
        assert query["response_type"] == "code" and query["code_challenge_method"] == "S256"
        assert query["resource"] == self.url, query
        assert query["redirect_uri"] in self._clients[query["client_id"]]
        code = secrets.token_urlsafe(8)
        self._codes[code] = (query["client_id"], query["code_challenge"], query["redirect_uri"])
        back = {"code": code, "state": query["state"]}
        return f"{query['redirect_uri']}?{urllib.parse.urlencode(back)}"

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        self.grants.append(form["grant_type"])
        # RFC 8707: required with the code (our server's rule), optional on a refresh, never another resource.
        if form.get("resource", None if form["grant_type"] == "refresh_token" else "") not in (self.url, None):
            return 400, {"error": "invalid_target"}
        if form["grant_type"] == "authorization_code":
            client, challenge, redirect = self._codes.pop(form["code"])
            digest = hashlib.sha256(form["code_verifier"].encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != challenge or form["redirect_uri"] != redirect:
                return 400, {"error": "invalid_grant"}
            assert form["client_id"] == client
        elif form.get("refresh_token") in self.refresh:
            self.refresh.discard(form["refresh_token"])
        else:
            return 400, {"error": "invalid_grant"}
        access, refresh = f"access-{secrets.token_hex(8)}", f"refresh-{secrets.token_hex(8)}"
        self.tokens.add(access)
        self.refresh.add(refresh)
        return 200, {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": refresh,
        }


async def _body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _app(state: AuthServer, mcp_app: Any) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    json_type = [(b"content-type", b"application/json")]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await mcp_app(scope, receive, send)  # lifespan
            return
        path, query = scope["path"], dict(urllib.parse.parse_qsl(scope["query_string"].decode()))
        metadata = state.metadata(path)
        if metadata is not None:
            await _answer(send, 200, json.dumps(metadata).encode(), json_type)
        elif path.startswith("/.well-known/"):
            await _answer(send, 404, b"", [])
        elif path == "/register":
            await _answer(send, 201, json.dumps(state.register(json.loads(await _body(receive)))).encode(), json_type)
        elif path == "/authorize":
            await _answer(send, 302, b"", [(b"location", state.authorize(query).encode())])
        elif path == "/token":
            form = dict(urllib.parse.parse_qsl((await _body(receive)).decode()))
            status, answer = state.token(form)
            await _answer(send, status, json.dumps(answer).encode(), json_type)
        else:
            bearer = dict(scope["headers"]).get(b"authorization", b"").decode().removeprefix("Bearer ")
            if bearer not in state.tokens:
                where = f'Bearer resource_metadata="{state.base}/.well-known/oauth-protected-resource/mcp"'
                await _answer(send, 401, b"", [(b"www-authenticate", where.encode())])
                return
            await mcp_app(scope, receive, send)

    return app


@asynccontextmanager
async def oauth_server() -> AsyncGenerator[AuthServer]:
    server = MCPServer("guarded")

    @server.tool()
    def whoami() -> str:
        return "you are logged in"

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # listening before anyone connects: no wait needed
    state = AuthServer(base=f"http://127.0.0.1:{sock.getsockname()[1]}")
    config = uvicorn.Config(_app(state, server.streamable_http_app()), log_level="error", lifespan="on")
    web = uvicorn.Server(config)
    config.timeout_graceful_shutdown = 0  # keep-alive connections of the clients: no reason to wait for them
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: web.serve(sockets=[sock]))
        try:
            yield state
        finally:
            web.should_exit = True
