"""What servers offer besides tools, as the pool serves it: the two resource tools the model gets when any server
lists resources (Claude Code's ListMcpResourcesTool / ReadMcpResourceTool), and the re-listing of a server whose
tools, prompts or resources list changed (`list_changed`), done by the pool between requests only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence

import anyio

from sprout_agent.core.errors import ServerAnswered, ServerGone
from sprout_agent.core.events import Event, ListChanged, Notice
from sprout_agent.core.messages import Text
from sprout_agent.core.protocols import PromptInfo, ResourceInfo, ToolOutcome, ToolSpec
from sprout_agent.mcp.state import ServerState

# The resource tools' server: no configured server can have this name (config names are [A-Za-z0-9_-]), and
# their names hold no "__", so they never collide with a server's `server__tool`.
RESOURCES = ""
LIST_RESOURCES = ToolSpec(
    "ListMcpResourcesTool",
    RESOURCES,
    "ListMcpResourcesTool",
    "Lists the resources the MCP servers offer (uri, name, type, description), optionally of one server. "
    "Read one with ReadMcpResourceTool.",
    {
        "type": "object",
        "properties": {"server": {"type": "string", "description": "Only this server's resources"}},
    },
    read_only=True,
)
READ_RESOURCE = ToolSpec(
    "ReadMcpResourceTool",
    RESOURCES,
    "ReadMcpResourceTool",
    "Reads one resource of an MCP server by its URI (as ListMcpResourcesTool lists it).",
    {
        "type": "object",
        "properties": {
            "server": {"type": "string", "description": "The MCP server's name"},
            "uri": {"type": "string", "description": "The resource's URI"},
        },
        "required": ["server", "uri"],
    },
    read_only=True,
)
MAX_LISTED = 200  # resources per ListMcpResourcesTool answer: the model can ask per server for more


def resource_tools(servers: Iterable[ServerState]) -> list[ToolSpec]:
    """The two resource tools when any server lists a resource; none otherwise."""
    return [LIST_RESOURCES, READ_RESOURCE] if any(server.resources for server in servers) else []


async def call_resource_tool(
    servers: Mapping[str, ServerState], spec: ToolSpec, arguments: Mapping[str, object]
) -> ToolOutcome:
    """Runs ListMcpResourcesTool or ReadMcpResourceTool; a bad argument or a dead server is an error outcome."""
    name = arguments.get("server")
    if name is not None and not isinstance(name, str):
        return _error("server must be a string")
    if spec.name == LIST_RESOURCES.name:
        return _listing(servers, name)
    uri = arguments.get("uri")
    server = servers.get(name or "")
    if not isinstance(uri, str) or not uri:
        return _error("uri must be a non-empty string")
    if server is None or server.state != "running" or server.link is None:
        return _error(server.unavailable() if server is not None else f"no MCP server named '{name}'")
    try:
        return await server.link.read_resource(uri)
    except ServerGone:
        return _error(server.unavailable())
    except ServerAnswered as exc:
        return _error(f"reading {uri} failed: {exc}")


def _listing(servers: Mapping[str, ServerState], name: str | None) -> ToolOutcome:
    if name is not None and name not in servers:
        return _error(f"no MCP server named '{name}'")
    chosen = [servers[name]] if name is not None else list(servers.values())
    found = [item for server in chosen if server.state == "running" for item in server.resources]
    rows = [_row(item) for item in found[:MAX_LISTED]]
    if len(found) > MAX_LISTED:
        rows.append({"more": f"{len(found) - MAX_LISTED} more: list one server's with the server argument"})
    return ToolOutcome((Text(json.dumps(rows, ensure_ascii=False, indent=1) if rows else "no resources"),))


def _row(item: ResourceInfo) -> dict[str, object]:
    row: dict[str, object] = {"server": item.server, "uri": item.uri, "name": item.name}
    if item.mime_type:
        row["mimeType"] = item.mime_type
    if item.description:
        row["description"] = item.description[:300]
    return row


def _error(text: str) -> ToolOutcome:
    return ToolOutcome((Text(text),), is_error=True)


async def relist(server: ServerState, emit: Callable[[Event], None], timeout: float) -> None:
    """Reads again each list the server said changed and says so in one line; a failure keeps the old list."""
    link = server.link
    for kind in sorted(server.stale):
        if link is None:
            return
        server.stale.discard(kind)  # before the listing: a change announced while it runs is read next time
        try:
            with anyio.fail_after(timeout):
                listed, notices = await link.relist(kind)
        except (TimeoutError, ServerGone, ServerAnswered) as exc:
            emit(Notice(f"MCP server '{server.config.name}': re-listing its {kind} failed: {exc}", "warning"))
            continue
        except BaseException:  # a cancelled turn: the next request tries again
            server.stale.add(kind)
            raise
        before, after = _names(server, kind), [_name_of(item) for item in listed]
        unchanged = list(_items(server, kind)) == list(listed)
        if kind == "tools":
            server.tools = [item for item in listed if isinstance(item, ToolSpec)]
        elif kind == "resources":
            server.resources = [item for item in listed if isinstance(item, ResourceInfo)]
        else:
            server.prompts = [item for item in listed if isinstance(item, PromptInfo)]
        added = tuple(name for name in after if name not in before)
        removed = tuple(name for name in before if name not in after)
        if not unchanged:  # a server that announces its list late, as it was, changed nothing a person must hear of
            emit(ListChanged(server.config.name, kind, len(after), added, removed))
        for notice in notices:
            emit(Notice(f"MCP server '{server.config.name}': {notice}", "warning"))


def _items(server: ServerState, kind: str) -> Sequence[ToolSpec | ResourceInfo | PromptInfo]:
    return server.tools if kind == "tools" else server.resources if kind == "resources" else server.prompts


def _names(server: ServerState, kind: str) -> list[str]:
    return [_name_of(item) for item in _items(server, kind)]


def _name_of(item: ToolSpec | ResourceInfo | PromptInfo) -> str:
    if isinstance(item, ToolSpec):
        return item.tool
    return item.uri if isinstance(item, ResourceInfo) else item.name
