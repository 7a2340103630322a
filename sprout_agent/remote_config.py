"""Remote MCP server entries (`"type": "http"` / `"sse"`, `url`, `headers`): their URL rule and expansion."""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Callable
from typing import cast

from sprout_agent.errors import ConfigError

# Claude Code writes "http"; "streamable-http" and "streamableHttp" are what other clients write for it.
HTTP_TYPES = frozenset({"http", "streamable-http", "streamableHttp"})
SSE_TYPES = frozenset({"sse"})
REMOTE_KEYS = frozenset({"type", "url", "headers", "timeout"})
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


def transport_of(kind: object, has_url: bool) -> str | None:
    """ "http" or "sse" for a remote entry, None for a stdio one. A `url` without a `type` is Streamable HTTP,
    as Cursor and VS Code files write it."""
    if isinstance(kind, str) and kind in HTTP_TYPES:
        return "http"
    if isinstance(kind, str) and kind in SSE_TYPES:
        return "sse"
    return "http" if has_url and kind is None else None


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
