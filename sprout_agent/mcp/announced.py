"""The built-in servers' tools, offered before the servers start: each built-in module's own `announce` gives the
listing its server would give (the same code, without the mcp SDK), so a run whose model calls no tool imports no
mcp and starts no server. The pool starts an announced server at its first call (pool.py).

Not a cache: nothing is stored, so nothing can be stale (a dev checkout's edited description, another sandbox
policy, the session's agent types are what `announce` reads, as the server would). When the server does start,
the pool compares what it lists with what was announced, and what the server says wins.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from sprout_agent.config.files import BUILTIN_MODULES, ServerConfig
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.mcp.client_features import ClientFeatures

AGENT_SERVER = BUILTIN_MODULES["agent"]  # serves the session's `Delegation` (ClientFeatures.delegation)
_OURS = frozenset(BUILTIN_MODULES.values())

# A built-in module's `announce(cwd, env[, served])`: its `tools/list` answer as wire dicts.
Announce = Callable[..., Sequence[Mapping[str, object]]]


def served_by(config: ServerConfig, client: ClientFeatures | None) -> object:
    """What an in-process server serves of the session's (the `agent` server: its `Delegation`; else None)."""
    if client is not None and config.in_process == AGENT_SERVER:
        return client.delegation
    return None


def spec_of(
    server: str, tool: str, description: str | None, schema: Mapping[str, object], read_only: bool | None
) -> ToolSpec:
    """A listed tool as the pool keeps it (`server__tool`, until the pool names it for the model)."""
    return ToolSpec(f"{server}__{tool}", server, tool, description or "", dict(schema), read_only)


def announced(config: ServerConfig, client: ClientFeatures | None) -> list[ToolSpec] | None:
    """The tools `config`'s server would list, for a built-in server whose module says so without starting; None:
    start the server to know (not one of ours, the `agent` server outside a session, or a listing it could not
    make, whose failure the start then reports as a server's)."""
    module = config.in_process
    if config.transport != "in-process" or module not in _OURS:
        return None
    served = served_by(config, client)
    if module == AGENT_SERVER and served is None:
        return None
    announce = cast(Announce | None, getattr(importlib.import_module(module), "announce", None))
    if announce is None:
        return None
    cwd, env = config.cwd or os.getcwd(), config.env
    try:
        listed = announce(cwd, env) if served is None else announce(cwd, env, served)
    except Exception:  # the server would fail alike: its start says why, as for any server
        return None
    specs = [_spec(config.name, tool) for tool in listed]
    return None if None in specs else [spec for spec in specs if spec is not None]


def _spec(server: str, tool: Mapping[str, object]) -> ToolSpec | None:
    """A wire dict as `link` reads a listed `Tool` (None: not one)."""
    name, description, schema = tool.get("name"), tool.get("description"), tool.get("inputSchema")
    annotations = cast(object, tool.get("annotations") or {})
    if not isinstance(name, str) or not isinstance(schema, dict) or not isinstance(annotations, Mapping):
        return None
    if description is not None and not isinstance(description, str):
        return None
    read_only = cast(Mapping[str, object], annotations).get("readOnlyHint")
    if read_only is not None and not isinstance(read_only, bool):
        return None
    return spec_of(server, name, description, cast(Mapping[str, object], schema), read_only)


def same_listing(announced: Sequence[ToolSpec], listed: Sequence[ToolSpec]) -> bool:
    """Whether a server listed the bytes announced for it (its schemas' key order too: the request's bytes are the
    prompt cache's key), the model's names aside (the pool gives those)."""

    def key(spec: ToolSpec) -> tuple[str, str, str, str, bool | None]:
        return (spec.server, spec.tool, spec.description, json.dumps(spec.input_schema), spec.read_only)

    return [key(spec) for spec in announced] == [key(spec) for spec in listed]
