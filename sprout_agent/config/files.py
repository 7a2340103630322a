"""Config files (`mcpServers` JSON): found, expanded and validated into the types of server_config.py; plus the
built-in servers."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from sprout_agent.config.compat import call_timeout, unknown_key_notices
from sprout_agent.config.expansion import env_name, expand_vars, os_string, unset_vars
from sprout_agent.config.remote import (
    HTTP_TYPES,
    REMOTE_KEYS,
    SSE_TYPES,
    oauth_settings,
    remote_parts,
)
from sprout_agent.config.server_config import REMOTE as REMOTE
from sprout_agent.config.server_config import BrokenServer as BrokenServer
from sprout_agent.config.server_config import ListedTransport as ListedTransport
from sprout_agent.config.server_config import LoadedConfig as LoadedConfig
from sprout_agent.config.server_config import SandboxPaths as SandboxPaths
from sprout_agent.config.server_config import ServerConfig as ServerConfig
from sprout_agent.config.server_config import Transport as Transport
from sprout_agent.config.server_config import listed_transport as listed_transport
from sprout_agent.config.server_names import claim, drop_shadowed
from sprout_agent.config.server_names import shown as _display
from sprout_agent.config.sources import find_sources
from sprout_agent.core.errors import ConfigError
from sprout_agent.trust.opening import Reader, Refused

# ---------------------------------------------------------------- config files

_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TOP_KEYS = frozenset({"mcpServers", "$schema", "sandbox"})
_SWITCHES = frozenset({"disabled", "enabled"})
_SDK_KEYS = frozenset({"type", "name"})
_SERVER_KEYS = frozenset({"command", "args", "env", "cwd", "timeout", "type", "sandbox"}) | _SWITCHES
_SANDBOX_MODES = ("off", "read-only", "workspace-write")
CONFIG_MAX_BYTES = 16 * 1024 * 1024  # a config file is a few KB; a hostile one is not read into memory whole


def load_config(
    explicit: Sequence[Path],
    cwd: Path,
    env: Mapping[str, str],
    user_config_dir: Path | None,
    *,
    strict: bool = True,
    user_env: Mapping[str, str] | None = None,
    mcp_configs: Sequence[str] = (),
    only_given: bool = False,
) -> LoadedConfig:
    """Find, read and validate the `mcpServers` config files.

    With `explicit` (--config) files: read each in order; a missing one is an error, and a later file's
    server replaces an earlier file's server of the same name (layering, with a notice).
    Otherwise: the nearest `.mcp.json` in `cwd` or above it, then the user file
    `<user_config_dir>/mcp.json` (~/.config/sprout-agent/mcp.json on Linux) if it exists; project
    servers come first, but on a name clash your own server stays and the project's is dropped, with a notice
    (server_names.py).
    `mcp_configs` (--mcp-config: paths or inline JSON) come last and replace servers of the same name;
    `only_given` (--strict-mcp-config) reads only `explicit` and `mcp_configs` (sources.py).
    `${VAR}` / `${VAR:-default}` in command, args, env values and cwd expand from `env`, except in files
    outside `cwd` (the user file, a --config file elsewhere), which expand from `user_env` when given (the
    real environment: a project's `.env` must not choose what the user's own servers run); `${PWD}` is `cwd`
    and `${SPROUT_AGENT_PYTHON}` our interpreter in every file. Servers from the project file are marked
    `project`. A key we do not read is a notice.
    With `strict=False` a bad server entry (an unset variable, a wrong type) is kept in `broken`
    instead of raising, so `mcp doctor` can report every server; file-level errors still raise, except in the
    project file (leniently loaded, a repository's broken file becomes a notice).
    """
    sources = find_sources(explicit, cwd, user_config_dir, mcp_configs, strict=only_given)
    project = sources.project
    merged: dict[str, ServerConfig] = {}
    notices: list[str] = list(sources.notices)
    broken: list[BrokenServer] | None = None if strict else []
    sandbox = SandboxPaths()
    for path in sources.files:
        shown = _display(path, cwd)
        is_project = path == project
        # .env is the working directory's: its values may fill in only files of that directory (a repository
        # cannot choose what a user's own config, named or looked up, runs). Inline --mcp-config JSON is the
        # caller's own, like a named file elsewhere.
        outside = path in sources.inline or not _inside(path, cwd)
        expand_from = user_env if user_env is not None and not is_project and outside else env
        # The session's directory, not the shell's: `--cwd` and an editor's thread run elsewhere, and a server
        # given `--repository ${PWD}` must see the project the session works on.
        # `${SPROUT_AGENT_PYTHON}`: the interpreter sprout-agent runs on, which has the mcp package, so a hook
        # server written in Python runs wherever sprout-agent is installed (examples/README.md).
        expand_from = {**expand_from, "PWD": str(cwd.absolute()), PYTHON_VARIABLE: sys.executable}
        try:
            top = _read_file(path, shown, sources.inline.get(path))
            notices.extend(unknown_key_notices(top, _TOP_KEYS, shown))
            servers = _servers_in(top, path, shown, expand_from, notices, broken)
            servers = _refuse_project_sdk(servers, is_project, shown, notices)
            if is_project and "sandbox" in top:  # a repository must not choose where commands may write
                notices.append(f"{shown}: its sandbox settings are ignored (only your own config files set them)")
            elif not is_project:
                sandbox = sandbox.plus(_sandbox_in(top, path, shown))
        except ConfigError as error:
            if not is_project or broken is None:
                raise
            notices.append(f"{error} (the project's config file is skipped)")  # a repository's bad file stops nothing
            continue
        for server in servers:
            server = replace(server, project=True) if is_project else server
            if clash := claim(merged, server, path in sources.overriding, cwd):
                notices.append(clash)
    files_read = tuple(path for path in sources.files if path not in sources.inline)
    bad = tuple(replace(entry, project=entry.source == project) for entry in broken or ())
    # A broken entry of yours still holds its name: the project's server of that name must not take it over.
    kept, dropped = drop_shadowed(merged.values(), {b.name: b.source for b in bad if not b.project}, cwd)
    return LoadedConfig(kept, files_read, (*notices, *dropped), bad, sandbox)


def _refuse_project_sdk(
    servers: list[ServerConfig], is_project: bool, shown: str, notices: list[str]
) -> list[ServerConfig]:
    """A repository's file must not route anything to the SDK driving the run: its `"type": "sdk"` are skipped."""
    if not is_project:
        return servers
    for server in servers:
        if server.transport == "sdk":
            notices.append(f"{shown}: skipping server '{server.name}': type \"sdk\" is read only from your own files")
    return [server for server in servers if server.transport != "sdk"]


def _inside(path: Path, directory: Path) -> bool:
    return path.resolve().is_relative_to(directory.resolve())


def _text_of(path: Path) -> str:
    """By the one reader (trust/opening.py): a project's `.mcp.json` that is a FIFO never blocks the start."""
    data = Reader().read(str(path), os.getcwd(), CONFIG_MAX_BYTES)
    if len(data) > CONFIG_MAX_BYTES:
        raise ValueError(f"larger than {CONFIG_MAX_BYTES // (1024 * 1024)} MiB")
    return data.decode("utf-8-sig")


def _read_file(path: Path, shown: str, inline: str | None = None) -> dict[str, object]:
    """The file's (or the inline JSON's) top-level object."""
    try:
        text = inline if inline is not None else _text_of(path)
    except FileNotFoundError:
        raise ConfigError(f"{shown}: config file not found") from None
    except (OSError, UnicodeDecodeError, Refused) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"{shown}: cannot read config file: {reason}") from None
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno} column {exc.colno}"
        raise ConfigError(f"{shown}: invalid JSON at {at}: {exc.msg}") from None
    except RecursionError:  # json's parser recurses per `[` or `{`
        raise ConfigError(f"{shown}: invalid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{shown}: top level must be a JSON object")
    return cast(dict[str, object], data)


def _servers_in(
    top: dict[str, object],
    path: Path,
    shown: str,
    env: Mapping[str, str],
    notices: list[str],
    broken: list[BrokenServer] | None,
) -> list[ServerConfig]:
    servers = top.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{shown}: mcpServers must be an object")
    parsed = (
        _parse_or_keep(name, entry, path, shown, env, notices, broken)
        for name, entry in cast(dict[str, object], servers).items()
    )
    return [server for server in parsed if server is not None]


def _sandbox_in(top: dict[str, object], path: Path, shown: str) -> SandboxPaths:
    """The top-level `sandbox` object: {"allowWrite": [dir, …], "denyRead": [path, …]}, `~` and paths relative
    to the file's directory resolved."""
    raw = top.get("sandbox", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{shown}: sandbox must be an object")
    found: dict[str, tuple[Path, ...]] = {}
    for key, value in cast(dict[str, object], raw).items():
        if key not in ("allowWrite", "denyRead"):
            raise ConfigError(f"{shown}: sandbox: unknown key '{key}' (expected allowWrite, denyRead)")
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in cast(list[object], value)):
            raise ConfigError(f"{shown}: sandbox.{key} must be a list of paths")
        found[key] = tuple(path.parent / Path(v).expanduser() for v in cast(list[str], value))
    return SandboxPaths(found.get("allowWrite", ()), found.get("denyRead", ()))


def _parse_or_keep(
    name: str,
    entry: object,
    path: Path,
    shown: str,
    env: Mapping[str, str],
    notices: list[str],
    broken: list[BrokenServer] | None,
) -> ServerConfig | None:
    """`_parse_server`, except that with a `broken` list (lenient loading) a bad entry lands there instead."""
    try:
        return _parse_server(name, entry, path, shown, env, notices)
    except ConfigError as exc:
        if broken is None:
            raise
        broken.append(BrokenServer(name, path, str(exc), unset_vars(entry, env)))
        return None


def _parse_server(
    name: str, entry: object, path: Path, shown: str, env: Mapping[str, str], notices: list[str]
) -> ServerConfig | None:
    where = f"{shown}: mcpServers.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object")
    raw = cast(dict[str, object], entry)
    kind = raw.get("type")
    if kind == "sdk":
        return _build_sdk(name, raw, path, where, notices)
    transport = _remote_transport(kind, "url" in raw)
    if kind == "ws" or (transport is None and "url" in raw):
        notices.append(f"{shown}: skipping server '{name}': type {kind!r} is not supported (stdio, http, sse)")
        return None
    if "headersHelper" in raw:  # a command from the file: running it would need the consent a stdio server has
        notices.append(f"{shown}: skipping server '{name}': headersHelper is not supported (put headers in headers)")
        return None
    if _disabled(raw, where):
        notices.append(f"{shown}: skipping server '{name}': disabled")
        return None
    if not _SERVER_NAME.fullmatch(name) or "__" in name:
        raise ConfigError(f"{where}: server name must be 1-64 of A-Z a-z 0-9 _ - without '__'")
    notices.extend(unknown_key_notices(raw, REMOTE_KEYS | _SWITCHES if transport else _SERVER_KEYS, where))
    if kind not in (None, "stdio") and transport is None:
        raise ConfigError(f'{where}.type must be "stdio", "http" or "sse"')
    server = (
        _build_remote(name, raw, path, where, env, transport)
        if transport
        else _build_server(name, raw, path, where, env)
    )
    return replace(server, call_timeout=call_timeout(raw.get("timeout"), where, notices))


def _remote_transport(kind: object, has_url: bool) -> Transport | None:
    """ "http" or "sse" for a remote entry, None for a stdio one. A `url` without a `type` is Streamable HTTP,
    as Cursor and VS Code files write it."""
    if isinstance(kind, str) and kind in HTTP_TYPES:
        return "http"
    if isinstance(kind, str) and kind in SSE_TYPES:
        return "sse"
    return "http" if has_url and kind is None else None


def _build_remote(
    name: str, raw: dict[str, object], path: Path, where: str, env: Mapping[str, str], transport: Transport
) -> ServerConfig:
    def expand(text: str, key: str) -> str:
        return expand_vars(text, env, f"{where}.{key}")

    url, headers = remote_parts(raw, where, expand)
    oauth = oauth_settings(raw.get("oauth"), where, expand)
    return ServerConfig(name, "", source=path, transport=transport, url=url, headers=headers, oauth=oauth)


def _build_sdk(name: str, raw: dict[str, object], path: Path, where: str, notices: list[str]) -> ServerConfig:
    """A server the Claude Agent SDK hosts in its own process (`create_sdk_mcp_server`): its messages travel over
    the SDK's control channel, so it has no command and no URL (the project's file may not name one)."""
    if not _SERVER_NAME.fullmatch(name) or "__" in name:
        raise ConfigError(f"{where}: server name must be 1-64 of A-Z a-z 0-9 _ - without '__'")
    # `name` is the SDK's own label (`create_sdk_mcp_server(name="calculator")` mounted as "calc"): as in Claude Code,
    # the key names the server, its tools (`mcp__calc__add`) and the messages the SDK routes to it.
    notices.extend(unknown_key_notices(raw, _SDK_KEYS, where))
    return ServerConfig(name, "", source=path, transport="sdk")


def _disabled(raw: dict[str, object], where: str) -> bool:
    for key, skip_when in (("disabled", True), ("enabled", False)):
        value = raw.get(key, not skip_when)
        if not isinstance(value, bool):
            raise ConfigError(f"{where}.{key} must be true or false")
        if value is skip_when:
            return True
    return False


def _build_server(name: str, raw: dict[str, object], path: Path, where: str, env: Mapping[str, str]) -> ServerConfig:
    command, args, server_env = raw.get("command"), raw.get("args", []), raw.get("env", {})
    cwd = raw.get("cwd")
    if command is None:
        raise ConfigError(f"{where}: missing command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}.command must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in cast(list[object], args)):
        raise ConfigError(f"{where}.args must be a list of strings")
    if not isinstance(server_env, dict) or not all(
        isinstance(v, str) for v in cast(dict[str, object], server_env).values()
    ):
        raise ConfigError(f"{where}.env must be an object of strings")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{where}.cwd must be a string")
    sandbox = raw.get("sandbox")
    if sandbox is not None and sandbox not in _SANDBOX_MODES:
        raise ConfigError(f"{where}.sandbox must be one of {', '.join(_SANDBOX_MODES)}")

    def expand(text: str, key: str) -> str:
        return os_string(expand_vars(text, env, f"{where}.{key}"), f"{where}.{key}")

    expanded_command = expand(command, "command")
    if not expanded_command.strip():
        raise ConfigError(f"{where}.command is empty after expanding variables")
    expanded_cwd = None if cwd is None else str(path.parent / expand(cwd, "cwd"))
    return ServerConfig(
        name=name,
        command=expanded_command,
        args=tuple(expand(a, f"args[{i}]") for i, a in enumerate(cast(list[str], args))),
        env={env_name(k, where): expand(v, f"env.{k}") for k, v in cast(dict[str, str], server_env).items()},
        cwd=expanded_cwd,
        source=path,
        sandbox=None if sandbox in (None, "off") else cast(str, sandbox),
    )


# A variable of config files only (never read from the environment): `${SPROUT_AGENT_PYTHON}` is our interpreter.
PYTHON_VARIABLE = "SPROUT_AGENT_PYTHON"

# The servers sprout-agent ships, by module (the tools in sprout_agent/tools/; `agent`, which serves the session's
# subagents and skills, in mcp/), started unless SPROUT_AGENT_BUILTIN_SERVERS leaves them out or a file of yours
# defines a server of the same name (which replaces it).
BUILTIN_MODULES = {
    "dev": "sprout_agent.tools.dev",
    "todo": "sprout_agent.tools.todo",
    "agent": "sprout_agent.mcp.agent_server",
}
BUILTIN_SERVERS = tuple(BUILTIN_MODULES)


def session_only(config: ServerConfig) -> str | None:
    """Why a server can start only inside a running session (None: it starts anywhere). `mcp doctor` and `hooks
    test` start servers with no session: such a server is skipped there, with this reason, never a failure."""
    if config.transport == "sdk":
        return "hosted by the Claude Agent SDK that drives a run"
    if config.transport == "in-process" and config.in_process == BUILTIN_MODULES["agent"]:
        return "serves a running session's subagents and skills"
    return None


def with_builtin_servers(
    loaded: LoadedConfig,
    wanted: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    only_tools: Mapping[str, frozenset[str]] | None = None,
) -> LoadedConfig:
    """The built-in servers first (each with `env`: the sandbox policy), unless a file of yours defines one; a
    project server of a built-in's name is dropped with a notice (server_names.py). `only_tools`: per built-in
    server, the tools it offers (`--tools`); a server given no tool is not started (its hooks with it, as
    Claude Code's `--tools ""` leaves no built-in tool)."""
    yours = {server.name for server in (*loaded.servers, *loaded.broken) if not server.project}
    builtins = tuple(
        ServerConfig(
            name,
            sys.executable,
            ("-m", BUILTIN_MODULES[name]),
            env=dict(env or {}),
            cwd=str(cwd),
            transport="in-process",
            in_process=BUILTIN_MODULES[name],
            only_tools=None if only_tools is None else only_tools.get(name, frozenset()),
        )
        for name in BUILTIN_SERVERS
        if name in wanted and name not in yours and (only_tools is None or only_tools.get(name))
    )
    servers, dropped = drop_shadowed(loaded.servers, {server.name: None for server in builtins}, cwd)
    return replace(loaded, servers=builtins + servers, notices=loaded.notices + dropped)
