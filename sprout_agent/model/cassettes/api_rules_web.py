"""The Messages API's rules for its own tools (web search, web fetch), for api_rules.py: defined by `type` (no
input_schema), their calls and results in the assistant turn, each `server_tool_use` followed in that same turn by
its result, a search result's encrypted content sent back as the API gave it. Stdlib only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

Json = dict[str, Any]

SERVER_TOOL_TYPES = {  # type -> the name it must have
    "web_search_20250305": "web_search",
    "web_search_20260209": "web_search",
    "web_fetch_20250910": "web_fetch",
    "web_fetch_20260209": "web_fetch",
}
RESULT_TYPES = {"web_search": "web_search_tool_result", "web_fetch": "web_fetch_tool_result"}


def server_tool_problems(index: int, tool: Json) -> list[str] | None:
    """Problems of a server tool definition; None when `tool` is a custom (input_schema) tool."""
    kind = tool.get("type")
    if kind in (None, "custom"):
        return None
    expected = SERVER_TOOL_TYPES.get(str(kind))
    if expected is None:
        return [f"tools.{index}.type: {kind!r} is not a tool type this API knows"]
    if tool.get("name") != expected:
        return [f"tools.{index}.name: a {kind} tool must be named {expected!r}"]
    uses = tool.get("max_uses")
    if uses is not None and (not isinstance(uses, int) or uses < 1):
        return [f"tools.{index}.max_uses: a positive integer is required"]
    return []


def defined_server_tools(tools: object) -> set[str]:
    listed = [cast(Json, t) for t in cast(list[Any], tools) if isinstance(t, dict)] if isinstance(tools, list) else []
    return {str(t.get("name")) for t in listed if t.get("type") in SERVER_TOOL_TYPES}


def server_block_problems(
    blocks: list[Json], where: str, role: str, defined: set[str], intact: Callable[[object, object], bool]
) -> list[str]:
    """The server tool blocks of one message: in assistant turns only, defined, each use paired with its result;
    `intact(url, encrypted_content)`: whether a search result comes back as the API gave it."""
    problems: list[str] = []
    open_uses: dict[str, str] = {}  # id -> tool name, waiting for its result
    for position, block in enumerate(blocks):
        at = f"{where}.content.{position}"
        kind = block.get("type")
        if kind == "server_tool_use":
            problems += _use_problems(block, at, role, defined)
            open_uses[str(block.get("id"))] = str(block.get("name"))
        elif kind in RESULT_TYPES.values():
            use = open_uses.pop(str(block.get("tool_use_id")), None)
            if use is None or RESULT_TYPES.get(use) != kind:
                problems.append(f"{at}: {kind} with tool_use_id {block.get('tool_use_id')!r} follows no matching use")
            problems += _result_problems(block, at, intact)
    for use_id, name in open_uses.items():
        result = RESULT_TYPES.get(name)
        problems.append(f"{where}: {name} tool use with id {use_id} was found without a corresponding {result} block")
    return problems


def _use_problems(block: Json, at: str, role: str, defined: set[str]) -> list[str]:
    problems: list[str] = []
    if role != "assistant":
        problems.append(f"{at}: server_tool_use blocks may only appear in assistant turns")
    name = str(block.get("name"))
    if name not in defined:
        problems.append(f"{at}: server_tool_use of {name!r}, a tool this request does not define")
    if not isinstance(block.get("input"), dict):
        problems.append(f"{at}.input: an object is required")
    return problems


def _result_problems(block: Json, at: str, intact: Callable[[object, object], bool]) -> list[str]:
    content = block.get("content")
    if isinstance(content, list):
        items = [cast(Json, i) if isinstance(i, dict) else None for i in cast(list[Any], content)]
        return [
            f"{at}.content.{i}.encrypted_content: invalid or modified"
            for i, item in enumerate(items)
            if item is None or not intact(item.get("url"), item.get("encrypted_content"))
        ]
    if not isinstance(content, dict) or "type" not in content:
        return [f"{at}.content: a result or an error object is required"]
    return []
