"""Remote MCP server entries (`"type": "http"` / `"sse"`, `url`, `headers`, `oauth`): their URL rule and expansion."""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from sprout_agent.core.errors import ConfigError

# Claude Code writes "http"; "streamable-http" and "streamableHttp" are what other clients write for it.
HTTP_TYPES = frozenset({"http", "streamable-http", "streamableHttp"})
SSE_TYPES = frozenset({"sse"})
REMOTE_KEYS = frozenset({"type", "url", "headers", "timeout", "oauth"})
# Claude Code's `oauth` keys (clientId, callbackPort, scopes) and two of ours: the secret of a pre-registered
# confidential client (write it as "${VAR}") and the https URL of a client ID metadata document.
_OAUTH_KEYS = {
    "clientId": "client_id",
    "clientSecret": "client_secret",
    "callbackPort": "callback_port",
    "scopes": "scopes",
    "clientMetadataUrl": "client_metadata_url",
}
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """A remote entry's `oauth` object: what the server's authorization server cannot tell us by discovery."""

    client_id: str | None = None
    client_secret: str | None = None
    callback_port: int | None = None  # the redirect URI is http://localhost:PORT/callback (as Claude Code's)
    scopes: str | None = None  # space-separated; beats what the server advertises
    client_metadata_url: str | None = None

    def __repr__(self) -> str:  # a ServerConfig in a traceback or a debug line must not show the secret
        return f"OAuthSettings(client_id={self.client_id!r}, callback_port={self.callback_port!r})"


def oauth_settings(raw: object, where: str, expand: Callable[[str, str], str]) -> OAuthSettings | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}.oauth must be an object")
    values: dict[str, str | int] = {}
    for key, value in cast(dict[str, object], raw).items():
        if key not in _OAUTH_KEYS:
            raise ConfigError(f"{where}.oauth: unknown key '{key}'")
        if key == "callbackPort":
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
                raise ConfigError(f"{where}.oauth.callbackPort must be a port number (1-65535)")
            values[_OAUTH_KEYS[key]] = value
        elif not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}.oauth.{key} must be a non-empty string")
        else:
            values[_OAUTH_KEYS[key]] = expand(value, f"oauth.{key}")
    url = values.get("client_metadata_url")
    if isinstance(url, str) and (not url.startswith("https://") or urllib.parse.urlsplit(url).path in ("", "/")):
        raise ConfigError(f"{where}.oauth.clientMetadataUrl must be an https URL with a path")
    return OAuthSettings(**values)  # pyright: ignore[reportArgumentType]


def remote_parts(raw: dict[str, object], where: str, expand: Callable[[str, str], str]) -> tuple[str, dict[str, str]]:
    """The entry's checked, expanded URL and headers."""
    url, headers = raw.get("url"), raw.get("headers", {})
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"{where}: a remote server needs a url (a non-empty string)")
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in cast(dict[str, object], headers).values()):
        raise ConfigError(f"{where}.headers must be an object of strings")
    expanded_url = expand(url, "url")
    check_url(expanded_url, f"{where}.url")
    return expanded_url, {
        header_name(k, where): header_value(expand(v, f"headers.{k}"), f"{where}.headers.{k}")
        for k, v in cast(dict[str, str], headers).items()
    }


def check_url(url: str, where: str) -> None:
    """http(s) only, and plain http only to this machine: headers often carry credentials, and over plain
    http anyone on the path reads them (and can answer as the server)."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"{where} must be an http:// or https:// URL with a host")
    if parsed.username is not None or parsed.password is not None:
        raise ConfigError(f"{where}: put credentials in headers, not in the URL (URLs end up in logs)")
    if parsed.scheme == "http" and not is_loopback(parsed.hostname):
        raise ConfigError(f"{where}: plain http is allowed only to this machine (localhost); use https")


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def header_name(name: str, where: str) -> str:
    # An HTTP token (RFC 9110): anything else would be refused by httpx2 at the first request, far from the file.
    if not name or any(not (c.isascii() and (c.isalnum() or c in "!#$%&'*+-.^_`|~")) for c in name):
        raise ConfigError(f"{where}.headers: {name!r} is not a valid header name")
    return name


def header_value(value: str, where: str) -> str:
    if any(c in value for c in "\r\n\0"):  # a line break would let a value add headers of its own
        raise ConfigError(f"{where} holds a line break or NUL byte")
    return value
