"""What a `session/new` or `session/load` starts from: the user's config and built-in servers, merged with the
stdio, http and sse servers the client passes (the client's win on a name clash)."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Literal, cast

from sprout_agent.config.expansion import os_string_problem
from sprout_agent.config.files import ServerConfig
from sprout_agent.config.remote import check_url, header_name, header_value
from sprout_agent.core.errors import ConfigError, MissingCredential, SproutError
from sprout_agent.faces.acp.auth import auth_required
from sprout_agent.faces.acp.session_template import AcpSetup
from sprout_agent.faces.acp.wire import INTERNAL_ERROR, INVALID_PARAMS, Json, RpcError
from sprout_agent.session.prepared import Prepared, prepare_in_directory

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def prepare_session(o: AcpSetup, cwd: Path, raw_servers: object, resume_id: str | None) -> Prepared:
    client = _client_servers(raw_servers, cwd)
    options = replace(o.template, cwd=cwd, resume_id=resume_id)
    try:
        prepared = prepare_in_directory(options, o.locations, os.environ)
    except MissingCredential as error:
        raise auth_required(error) from None
    except SproutError as error:
        raise RpcError(INTERNAL_ERROR, str(error)) from None
    names = {server.name for server in client}
    kept = tuple(server for server in prepared.loaded.servers if server.name not in names)
    loaded = prepared.loaded
    # Nobody can be asked before the session exists: unapproved project servers are skipped with a notice the
    # editor shows with the first prompt (approve them with `sprout-agent mcp approve` in that folder).
    notices = loaded.notices + prepared.held_back_notices()
    return replace(prepared, loaded=replace(loaded, servers=kept + client, notices=notices))


def _client_servers(raw: object, cwd: Path) -> tuple[ServerConfig, ...]:
    """The client's servers as our configs; a malformed entry is an Invalid params error."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RpcError(INVALID_PARAMS, "Invalid params: mcpServers must be an array")
    servers: list[ServerConfig] = []
    for entry in cast(list[object], raw):
        if not isinstance(entry, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: each mcpServers entry must be an object")
        item = cast(Json, entry)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise RpcError(INVALID_PARAMS, "Invalid params: each mcpServers entry needs a name")
        match item.get("type", "stdio"):
            case "http":
                servers.append(_remote_server(name, "http", item))
            case "sse":
                servers.append(_remote_server(name, "sse", item))
            case _:
                servers.append(_stdio_server(name, item, cwd))
    return tuple(servers)


def _stdio_server(name: str, item: Json, cwd: Path) -> ServerConfig:
    command, args, env = item.get("command"), item.get("args", []), item.get("env", [])
    if item.get("type", "stdio") != "stdio" or not isinstance(command, str) or not command:
        raise RpcError(INVALID_PARAMS, f"Invalid params: mcpServers '{name}' needs a command (stdio servers only)")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in cast(list[object], args)):
        raise RpcError(INVALID_PARAMS, f"Invalid params: mcpServers '{name}'.args must be strings")
    variables: dict[str, str] = {}
    for pair in cast(list[object], env) if isinstance(env, list) else [None]:
        value = cast(Json, pair) if isinstance(pair, dict) else {}
        key, text = value.get("name"), value.get("value")
        if not isinstance(key, str) or not key or "=" in key or not isinstance(text, str):
            raise RpcError(INVALID_PARAMS, f"Invalid params: mcpServers '{name}'.env must be name/value pairs")
        variables[key] = text
    # Refused here, not when the session's servers start: that failure would end the whole session.
    texts = (command, *cast(list[str], args), *variables, *variables.values())
    if any(os_string_problem(text) is not None for text in texts):
        raise RpcError(INVALID_PARAMS, f"Invalid params: mcpServers '{name}' holds a NUL byte or a lone surrogate")
    return ServerConfig(_safe_name(name), command, tuple(cast(list[str], args)), variables, cwd=str(cwd))


def _remote_server(name: str, kind: Literal["http", "sse"], item: Json) -> ServerConfig:
    """`{"type": "http" | "sse", "name", "url", "headers": [{name, value}]}`, checked as a config file's is."""
    url, pairs = item.get("url"), item.get("headers", [])
    if not isinstance(url, str) or not isinstance(pairs, list):
        raise RpcError(INVALID_PARAMS, f"Invalid params: mcpServers '{name}' needs a url and a headers array")
    headers: dict[str, str] = {}
    try:
        check_url(url, f"mcpServers '{name}'.url")
        for pair in cast(list[object], pairs):
            value = cast(Json, pair) if isinstance(pair, dict) else {}
            key, text = value.get("name"), value.get("value")
            if not isinstance(key, str) or not isinstance(text, str):
                raise ConfigError(f"mcpServers '{name}'.headers must be name/value pairs")
            headers[header_name(key, f"mcpServers '{name}'")] = header_value(text, f"mcpServers '{name}'.headers")
    except ConfigError as error:  # refused here: failing when the servers start would end the whole session
        raise RpcError(INVALID_PARAMS, f"Invalid params: {error}") from None
    return ServerConfig(_safe_name(name), "", transport=kind, url=url, headers=headers)


def _safe_name(name: str) -> str:
    safe = _UNSAFE_NAME.sub("_", name).strip("_")
    while "__" in safe:  # `__` separates server and tool in the model's tool names
        safe = safe.replace("__", "_")
    return safe[:64] or "client"
