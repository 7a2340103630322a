"""The built-in `agent` server: the `task` tool (a subagent on a task) and the `skill` tool (a skill's body, read
when the model asks). An MCP server like the dev tools, so the permission rules, `--tools`, `_PreToolUse` and the
faces treat its calls as any other; it runs in the agent's process because what it serves is the session's
(`Delegation`, session/delegation.py), which reaches it through `ClientFeatures`.

Built on the mcp SDK's low-level `Server` (mcp 2.3), as the dev tools are (tools/_server.py, which the agent may
not import): two hand-written schemas, no pydantic models built from signatures. Its listing (`announce`) needs no
mcp: the session offers it to the model before the server starts (announced.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sprout_agent import __version__
from sprout_agent.core.messages import Text
from sprout_agent.core.protocols import Delegation

if TYPE_CHECKING:  # imported where the server is built: its listing needs none of it
    from mcp.server import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams

NAME = "agent"
TASK, SKILL = "task", "skill"
CALL_ID_META = "sprout-agent/tool-use-id"  # link.py puts the model's call id there for our in-process servers

# Keys in the order a client reads them off the wire (as tools/_server.py's `input_schema`): the listing announced
# before the server starts is the bytes it lists after.
_TASK_SCHEMA: dict[str, Any] = {
    "properties": {
        "description": {"type": "string", "description": "A 3-5 word label"},
        "prompt": {"type": "string", "description": "The whole task: the agent sees nothing else"},
        "subagent_type": {"type": "string"},  # the description lists the types
    },
    "required": ["description", "prompt"],
    "type": "object",
    "additionalProperties": False,
}
_SKILL_SCHEMA: dict[str, Any] = {
    "properties": {
        "skill": {"type": "string", "description": "The skill's name, as the system prompt lists it"},
        "file": {"type": "string", "description": "A file beside its SKILL.md (relative path); omit for SKILL.md"},
    },
    "required": ["skill"],
    "type": "object",
    "additionalProperties": False,
}
_SKILL_DESCRIPTION = (
    "Load a skill listed in the system prompt: returns its SKILL.md instructions (or, with `file`, one of the files "
    "beside it). Load a skill when the task matches its description, before you start the task."
)


def announce(cwd: str, env: Mapping[str, str], delegation: Delegation) -> list[dict[str, Any]]:
    """What `create_server_in` lists (`tools/list`, the wire's names): `task`, and `skill` when there are skills."""
    del cwd, env  # what it serves is the session's
    tools: list[dict[str, Any]] = [
        {
            "name": TASK,
            "description": delegation.task_description(),
            "inputSchema": _TASK_SCHEMA,
            "annotations": {"readOnlyHint": False, "openWorldHint": False},
        }
    ]
    if delegation.has_skills():
        tools.append(
            {
                "name": SKILL,
                "description": _SKILL_DESCRIPTION,
                "inputSchema": _SKILL_SCHEMA,
                "annotations": {"readOnlyHint": True, "openWorldHint": False},
            }
        )
    return tools


def create_server_in(cwd: str, env: Mapping[str, str], delegation: Delegation) -> Server[Any]:
    from mcp.server.lowlevel import Server
    from mcp.types import ListToolsResult, Tool

    tools = [Tool.model_validate(tool) for tool in announce(cwd, env, delegation)]

    async def on_list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def on_call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        arguments: dict[str, Any] = dict(params.arguments or {})
        if params.name == TASK:
            call_id = str((params.meta or {}).get(CALL_ID_META, ""))
            outcome = await delegation.run_task(call_id, arguments)
            text = "".join(block.text for block in outcome.content if isinstance(block, Text))
            return _text(text, outcome.is_error)
        if params.name == SKILL and delegation.has_skills():
            return _skill(delegation, arguments)
        return _text(f"unknown tool {params.name!r}", True)

    return Server(NAME, version=__version__, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def _skill(delegation: Delegation, arguments: Mapping[str, Any]) -> CallToolResult:
    name, file = arguments.get("skill"), arguments.get("file")
    if not isinstance(name, str) or not (file is None or isinstance(file, str)):
        return _text("skill: give `skill` (a name) and optionally `file` (a relative path), as strings", True)
    try:
        return _text(delegation.read_skill(name, file), False)
    except ValueError as error:
        return _text(str(error), True)


def _text(text: str, is_error: bool) -> CallToolResult:
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)
