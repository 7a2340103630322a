"""The typed config: a server's entry as read from a config file (or built in), one that could not be read, the
sandbox paths a file adds, and a whole loaded config. Read and checked by files.py; every other module matches on
these."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sprout_agent.config.remote import OAuthSettings
from sprout_agent.trust.secrets import secret_name

Transport = Literal["stdio", "in-process", "sdk", "http", "sse"]
"""How the agent reaches a server, decided once when its entry is read and the one thing every other module
matches on: "stdio" spawns `command` and speaks over its pipes; "in-process" runs a built-in server's module
(`in_process`) inside the agent over memory streams; "sdk" relays to a server the Claude Agent SDK driving the run
hosts; "http" (Streamable HTTP) and "sse" (the older HTTP+SSE) reach `url`."""

REMOTE: tuple[Transport, ...] = ("http", "sse")  # reached at `url`

ListedTransport = Literal["stdio", "sdk", "http", "sse"]  # what `listed_transport` gives


def listed_transport(transport: Transport) -> ListedTransport:
    """The transport as stream-json's init line and `mcp list --json` name it: their values (stdio, http, sse,
    sdk) came before "in-process", and a built-in server is "stdio" there (it also runs standalone over stdio)."""
    return "stdio" if transport == "in-process" else transport


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One MCP server (stdio, in-process, sdk, or remote over http/sse), with every `${VAR}` already expanded."""

    name: str
    command: str  # "" for a remote server
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    start_timeout: float | None = None  # seconds; None = the global default (only `mcp doctor --timeout` sets it)
    source: Path | None = None  # the file it came from; None = built in
    # Built-in servers run inside the agent's process (same MCP protocol over in-memory streams): the agent
    # has imported mcp already, so they cost no second interpreter. `command`/`args` run the same server
    # standalone.
    in_process: str | None = None
    # Found by the lookup in the working directory or above it (a cloned repository's file): starts only with
    # the user's consent (consent.py). Files named with --config and the user config are the user's own.
    project: bool = False
    # Ours (Claude Code ignores it): the OS sandbox the server process runs in, "read-only" or
    # "workspace-write" (sandboxing.ServerSandboxes); None or "off" = unsandboxed, as Claude Code runs it.
    sandbox: str | None = None
    # One type rather than one per transport: consent, the pool and the faces handle every server alike; the
    # fields a transport does not use stay empty (`__post_init__` holds `in_process` and `url` to it).
    transport: Transport = "stdio"
    url: str | None = None  # a remote server's ("http", "sse"), with the headers every request carries
    headers: dict[str, str] = field(default_factory=dict[str, str])
    oauth: OAuthSettings | None = None  # the entry's `oauth` key (a pre-registered client, scopes, …)
    call_timeout: float | None = None  # seconds, each tool call's bound (the entry's `timeout`); None = the global
    # The server's tools offered to the model (`--tools` sets it on the built-in servers); None = all. Hooks are
    # not offered tools: they stay, whatever this holds.
    only_tools: frozenset[str] | None = None

    def __post_init__(self) -> None:
        # The transport alone decides how a server is reached: a module path or URL it would ignore is a mistake
        # of whoever built the record, caught here rather than as a server started the wrong way.
        if (self.transport == "in-process") != (self.in_process is not None):
            raise ValueError(f"server '{self.name}': in_process is set exactly when the transport is in-process")
        if (self.transport in REMOTE) != (self.url is not None):
            raise ValueError(f"server '{self.name}': url is set exactly when the transport is http or sse")

    @property
    def remote(self) -> bool:
        """Reached over HTTP at `url` (then `command` is "")."""
        return self.transport in REMOTE


@dataclass(frozen=True, slots=True)
class BrokenServer:
    """A server entry that cannot be used as written; only lenient loading (`mcp doctor`) keeps these."""

    name: str
    source: Path
    error: str
    unset_vars: tuple[str, ...] = ()  # every `${VAR}` without a default that the environment lacks
    project: bool = False  # from the project's `.mcp.json` (ServerConfig.project)


@dataclass(frozen=True, slots=True)
class SandboxPaths:
    """The top-level `sandbox` key of the user's own config files (a project's is ignored): more directories
    sandboxed commands may write, more paths hidden from them."""

    allow_write: tuple[Path, ...] = ()
    deny_read: tuple[Path, ...] = ()

    def plus(self, other: SandboxPaths) -> SandboxPaths:
        return SandboxPaths(self.allow_write + other.allow_write, self.deny_read + other.deny_read)


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    servers: tuple[ServerConfig, ...]
    files_read: tuple[Path, ...]
    notices: tuple[str, ...]  # one-line notices, e.g. a skipped url/http/sse entry
    broken: tuple[BrokenServer, ...] = ()  # filled only when loaded with strict=False
    sandbox: SandboxPaths = field(default_factory=SandboxPaths)


def configured_credentials(servers: Iterable[ServerConfig]) -> dict[str, str]:
    """The credentials the config hands its servers, for the secret filter (trust/secrets.py `redactor`): each
    server's `env` (the filter keeps those with a secret name or shape) and its headers that carry one
    (`Authorization`, `X-Api-Key`…), with the token also without its scheme (`Bearer …`: a text may quote it alone)."""
    found: dict[str, str] = {}  # keyed `NAME.index`: the filter judges the name, never the server's
    for index, server in enumerate(servers):
        found |= {f"{name}.{index}": value for name, value in server.env.items()}
        for name, value in server.headers.items():
            if secret_name(name):
                found[f"{name}.{index}"] = value
                found[f"{name}.{index}.alone"] = value.split(" ", 1)[-1]
    return found
