"""What the Messages API refuses with 400 invalid_request_error, in one place: the replay runs every request it serves
through `endpoint_problems` (cassettes/checked.py), and the tests' fake API runs every request it gets through it too,
so neither can answer a request the real API would refuse. Each problem names where it is, as a path. Stdlib only."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from sprout_agent.model.cassettes.api_rules_media import document_problems, image_problems, result_content_problems
from sprout_agent.model.cassettes.api_rules_strict import strict_tools_problems
from sprout_agent.model.cassettes.api_rules_web import defined_server_tools, server_block_problems, server_tool_problems

Json = dict[str, Any]

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what we send; the API allows 128, other providers 64
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_CACHE_BREAKPOINTS = 4
ROLES = ("user", "assistant")
THINKING_TYPES = ("thinking", "redacted_thinking")
THINKING_KINDS = ("adaptive", "enabled", "disabled", "between_tools")
MESSAGES, COUNT_TOKENS = "/v1/messages", "/v1/messages/count_tokens"


@dataclass(frozen=True, slots=True)
class Vouched:
    """Whether an opaque value the API issued comes back as issued: a thinking block's signature (for its model and
    text), a redacted_thinking block's data (for its model), a search result's encrypted content (for its url). The
    real API checks its own cryptography; the fake API checks the values it sealed, a replay the cassette's."""

    thinking: Callable[[str, str, object], bool]  # model, thinking text, signature
    redacted: Callable[[str, object], bool]  # model, data
    search_result: Callable[[object, object], bool]  # url, encrypted_content


def endpoint_problems(path: str, body: object, vouched: Vouched, capabilities: Json | None = None) -> list[str]:
    """Every reason the API would refuse this POST (`path` without its query). count_tokens takes a messages body
    without max_tokens or stream."""
    if path == COUNT_TOKENS:
        if not isinstance(body, dict):
            return ["the body is not a JSON object"]
        counted = cast(Json, body)
        extra = [f"{key}: Extra inputs are not permitted" for key in ("max_tokens", "stream") if key in counted]
        return extra + request_problems(counted | {"max_tokens": 1}, vouched, capabilities)
    if path == MESSAGES:
        return request_problems(body, vouched, capabilities)
    return [f"no route {path}"]


def request_problems(body: object, vouched: Vouched, capabilities: Json | None = None) -> list[str]:
    """Every reason the API would refuse this /v1/messages body (empty: it would accept it).

    `capabilities`: the model's Models API `capabilities`, when known; a `thinking` type, an effort level or a
    feature it does not list is refused, as the real API refuses it.
    """
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    request = cast(Json, body)
    problems = (
        _option_problems(request, capabilities) + _top_problems(request) + _tool_list_problems(request, capabilities)
    )
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: a non-empty list is required"]
    listed = cast(list[Any], messages)
    tools = request.get("tools")
    problems += _messages_problems(listed, bool(tools), defined_server_tools(tools), vouched)
    problems += _thinking_problems(request, listed, vouched)
    breakpoints = _count_cache_control(request)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        problems.append(f"cache_control: {breakpoints} breakpoints, at most {MAX_CACHE_BREAKPOINTS} are allowed")
    return problems


def _top_problems(body: Json) -> list[str]:
    problems: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: a non-empty string is required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        problems.append("max_tokens: a positive integer is required")
    return problems + _system_problems(body.get("system"))


def _tool_list_problems(body: Json, capabilities: Json | None) -> list[str]:
    tools = body.get("tools")
    problems = _tools_problems(tools)
    problems += strict_tools_problems(tools, capabilities)
    searches = _supported(capabilities, "server_tools", "web_search")
    if capabilities is not None and defined_server_tools(tools) and not searches:
        problems.append("tools: web search and fetch are not supported for this model")
    return problems


def _supported(capabilities: Json | None, *keys: str) -> bool:
    """Whether the capability at `keys` says supported (False when any step is missing)."""
    node: Json = capabilities or {}
    for key in keys:
        found = node.get(key)
        node = cast(Json, found) if isinstance(found, dict) else {}
    return bool(node.get("supported"))


def _system_problems(system: object) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [] if system.strip() else ["system: text must be non-empty"]
    if not isinstance(system, list):
        return ["system: a string or a list of text blocks is required"]
    problems: list[str] = []
    for index, block in enumerate(cast(list[Any], system)):
        if not isinstance(block, dict) or cast(Json, block).get("type") != "text":
            problems.append(f"system.{index}: only text blocks are allowed")
        elif not str(cast(Json, block).get("text", "")).strip():
            problems.append(f"system.{index}: text content blocks must contain non-whitespace text")
    return problems


def _tools_problems(tools: object) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ["tools: a list is required"]
    problems: list[str] = []
    seen: set[str] = set()
    for index, tool in enumerate(cast(list[Any], tools)):
        if not isinstance(tool, dict):
            problems.append(f"tools.{index}: an object is required")
            continue
        definition = cast(Json, tool)
        server = server_tool_problems(index, definition)
        problems += server if server is not None else _custom_tool_problems(index, definition, seen)
    return problems


def _unique_match(value: object, pattern: re.Pattern[str], seen: set[str], where: str, what: str) -> list[str]:
    """A name or id the API holds to `pattern` and to being unique among `seen` (which it joins)."""
    if not isinstance(value, str) or not pattern.match(value):
        return [f"{where}: {value!r} does not match {pattern.pattern}"]
    if value in seen:
        return [f"{where}: {what} must be unique, {value!r} is repeated"]
    seen.add(value)
    return []


def _custom_tool_problems(index: int, tool: Json, seen: set[str]) -> list[str]:
    problems: list[str] = []
    problems += _unique_match(tool.get("name"), TOOL_NAME, seen, f"tools.{index}.name", "tool names")
    schema = tool.get("input_schema")
    if not isinstance(schema, dict) or cast(Json, schema).get("type") != "object":
        problems.append(f"tools.{index}.input_schema: an object schema with type 'object' is required")
    return problems


def _messages_problems(messages: list[Any], tools_defined: bool, server_tools: set[str], vouched: Vouched) -> list[str]:
    problems: list[str] = []
    seen_ids: set[str] = set()
    previous_uses: list[str] = []  # tool_use ids of the previous message, which this one must answer
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, dict) or cast(Json, message).get("role") not in ROLES:
            problems.append(f"{where}: role must be user or assistant")
            previous_uses = []
            continue
        role = str(cast(Json, message)["role"])
        expected = ROLES[index % 2]
        if role != expected:
            problems.append(f"{where}: roles must alternate starting with user; got {role}, expected {expected}")
        blocks = _blocks(cast(Json, message).get("content"), where, problems)
        for position, block in enumerate(blocks):
            problems += _block_problems(block, f"{where}.content.{position}", role, tools_defined, seen_ids)
        problems += server_block_problems(blocks, where, role, server_tools, vouched.search_result)
        problems += _answer_problems(previous_uses, blocks, where)
        previous_uses = [b["id"] for b in blocks if b.get("type") == "tool_use" and isinstance(b.get("id"), str)]
    if previous_uses:
        problems.append(f"messages.{len(messages) - 1}: tool_use ids {previous_uses} are never answered")
    return problems


def _blocks(content: object, where: str, problems: list[str]) -> list[Json]:
    if isinstance(content, str):
        if not content.strip():
            problems.append(f"{where}: content must be non-empty")
        return [{"type": "text", "text": content or " "}]
    if not isinstance(content, list) or not content:
        problems.append(f"{where}: content must be a non-empty string or list")
        return []
    listed = cast(list[Any], content)
    blocks = [cast(Json, block) for block in listed if isinstance(block, dict)]
    if len(blocks) != len(listed):
        problems.append(f"{where}: every content block must be an object")
    return blocks


def _block_problems(block: Json, where: str, role: str, tools_defined: bool, seen_ids: set[str]) -> list[str]:
    kind = block.get("type")
    if kind == "text":
        return [] if str(block.get("text", "")).strip() else [f"{where}: text blocks must contain non-whitespace text"]
    if kind == "image":
        return image_problems(block, where)
    if kind == "document":
        return document_problems(block, where, role)
    if kind == "tool_use":
        return _tool_use_problems(block, where, role, tools_defined, seen_ids)
    if kind in THINKING_TYPES:
        return [] if role == "assistant" else [f"{where}: {kind} blocks may only appear in assistant turns"]
    if kind in ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result"):
        return []  # api_rules_web.py checks them, as a turn
    if kind == "tool_result":
        problems = [] if role == "user" else [f"{where}: tool_result blocks may only appear in user turns"]
        if not tools_defined:
            problems.append(f"{where}: requests which include tool_use or tool_result blocks must define tools")
        return problems + result_content_problems(block.get("content"), where)
    return [f"{where}: unsupported block type {kind!r}"]


def _tool_use_problems(block: Json, where: str, role: str, tools_defined: bool, seen_ids: set[str]) -> list[str]:
    problems = [] if role == "assistant" else [f"{where}: tool_use blocks may only appear in assistant turns"]
    if not tools_defined:
        problems.append(f"{where}: requests which include tool_use or tool_result blocks must define tools")
    problems += _unique_match(block.get("id"), TOOL_USE_ID, seen_ids, f"{where}.id", "tool_use ids")
    if not isinstance(block.get("name"), str) or not block["name"]:
        problems.append(f"{where}.name: a non-empty string is required")
    if not isinstance(block.get("input"), dict):
        problems.append(f"{where}.input: an object is required")
    return problems


def _answer_problems(uses: list[str], blocks: list[Json], where: str) -> list[str]:
    """The message after a tool_use turn answers every id first; a tool_result answers only those ids."""
    results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
    problems: list[str] = []
    orphans = [r for r in results if r not in uses]
    if orphans:
        problems.append(
            f"{where}: unexpected tool_use_id {orphans} in tool_result blocks: each tool_result must have a "
            "corresponding tool_use block in the previous message"
        )
    if not uses:
        return problems
    leading = [b.get("tool_use_id") for b in blocks[: len(uses)] if b.get("type") == "tool_result"]
    if sorted(map(str, leading)) != sorted(uses):
        problems.append(
            f"{where}: tool_use ids {uses} were found without tool_result blocks immediately after: each tool_use "
            f"needs a tool_result in the next message, before anything else (got {results})"
        )
    return problems


def _dicts(value: object) -> list[Json]:
    """The objects of a list (nothing for anything else)."""
    return [cast(Json, v) for v in cast(list[Any], value) if isinstance(v, dict)] if isinstance(value, list) else []


def _message_blocks(messages: list[Any]) -> list[tuple[int, int, Json]]:
    """(message index, block index, block) of every content block given as an object."""
    return [
        (index, position, block)
        for index, message in enumerate(_dicts(messages))
        for position, block in enumerate(_dicts(message.get("content")))
    ]


def _count_cache_control(body: Json) -> int:
    parts = [*_dicts(body.get("tools")), *_dicts(body.get("system"))]
    for _, _, block in _message_blocks(_dicts(body.get("messages"))):
        parts += [block, *_dicts(block.get("content"))]
    return sum("cache_control" in part for part in parts)


def _option_problems(body: Json, capabilities: Json | None) -> list[str]:
    problems: list[str] = []
    thinking = body.get("thinking")
    if thinking is not None:
        problems += _thinking_option_problems(thinking, body.get("max_tokens"), capabilities)
    config = body.get("output_config")
    effort = cast(Json, config).get("effort") if isinstance(config, dict) else None
    supported = _supported(capabilities, "effort") and _supported(capabilities, "effort", str(effort))
    if effort is not None and capabilities is not None and not supported:
        problems.append(f"output_config.effort: {effort!r} is not supported for this model")
    return problems


def _thinking_option_problems(thinking: object, max_tokens: object, capabilities: Json | None) -> list[str]:
    setting = cast(Json, thinking) if isinstance(thinking, dict) else {}
    kind = setting.get("type")
    problems: list[str] = []
    if kind not in THINKING_KINDS:
        problems.append(f"thinking.type: {kind!r} is not one of {', '.join(THINKING_KINDS)}")
    elif kind == "enabled":
        budget = setting.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            problems.append("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        elif isinstance(max_tokens, int) and budget >= max_tokens:
            problems.append("`max_tokens` must be greater than `thinking.budget_tokens`")
    if capabilities is not None and not _supported(capabilities, "thinking", "types", str(kind)):
        problems.append(f"thinking.type.{kind} is not supported for this model")
    return problems


def _thinking_problems(body: Json, messages: list[Any], vouched: Vouched) -> list[str]:
    """Signatures must come back byte-identical and from this model; with thinking on (a budget), the assistant
    turn that the last tool results answer must start with its thinking."""
    model = str(body.get("model", ""))
    problems: list[str] = []
    for index, position, block in _message_blocks(messages):
        where, kind = f"messages.{index}.content.{position}", block.get("type")
        if kind not in THINKING_TYPES:
            continue
        if "cache_control" in block:
            problems.append(f"{where}: cache_control cannot be set on {kind} blocks")
        if kind == "thinking" and not vouched.thinking(model, str(block.get("thinking")), block.get("signature")):
            problems.append(f"{where}: Invalid `signature` in `thinking` block")
        if kind == "redacted_thinking" and not vouched.redacted(model, block.get("data")):
            problems.append(f"{where}: Invalid `data` in `redacted_thinking` block")
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and cast(Json, thinking).get("type") == "enabled" and len(messages) >= 2:
        problems += _thinking_first_problems(messages)
    return problems


def _thinking_first_problems(messages: list[Any]) -> list[str]:
    last, before = messages[-1], messages[-2]
    answers = isinstance(last, dict) and any(
        b.get("type") == "tool_result" for b in _dicts(cast(Json, last).get("content"))
    )
    blocks = _dicts(cast(Json, before).get("content")) if isinstance(before, dict) else []
    if not answers or not blocks or blocks[0].get("type") in THINKING_TYPES:
        return []
    return [
        f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        f"`{blocks[0].get('type')}`. When `thinking` is enabled, a final `assistant` message must start with "
        "a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
    ]
