"""What the Messages API refuses with 400 invalid_request_error, as one checker for every test double.

The fake HTTP server (tests/fake_anthropic.py) and the scripted model (tests/loop_doubles.py) both run a
request body through `request_problems`, so a history the real API would refuse fails the test that made it.
The rules are the ones the API documents and enforces; each problem names where it is.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from tests.api_rules_strict import strict_tools_problems
from tests.api_rules_web import defined_server_tools, server_block_problems, server_tool_definition_problems

Json = dict[str, Any]

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what we send; the API allows 128, other providers 64
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
IMAGE_MAX_BASE64_BYTES = 5 * 1024 * 1024  # per image, on the base64 text (the API's own error says so)
IMAGE_MAGIC = {  # the API decodes the image and refuses bytes that contradict the declared type
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
MAX_CACHE_BREAKPOINTS = 4
ROLES = ("user", "assistant")


THINKING_TYPES = ("thinking", "redacted_thinking")


def sign(model: str, thinking: str) -> str:
    """The signature the fakes give a thinking block: bound to its text and to the model that wrote it."""
    return "sig_" + hashlib.sha256(f"{model}\n{thinking}".encode()).hexdigest()


def sealed(model: str, secret: str) -> str:
    """A redacted_thinking block's `data`: opaque, but the fakes can tell whether it came back unchanged."""
    payload = base64.b64encode(secret.encode()).decode()
    return f"{payload}.{_mac(model, payload)}"


def _mac(model: str, payload: str) -> str:
    return hashlib.sha256(f"{model}\n{payload}".encode()).hexdigest()[:32]


class InvalidRequest(AssertionError):
    """A request the real API would refuse: a bug in whatever built it, so the test fails loudly."""


def assert_valid_request(body: Json) -> None:
    problems = request_problems(body)
    if problems:
        raise InvalidRequest("the API would refuse this request:\n  " + "\n  ".join(problems))


MESSAGES, COUNT_TOKENS = "/v1/messages", "/v1/messages/count_tokens"


def endpoint_problems(path: str, body: object, capabilities: Json | None = None) -> list[str]:
    """Every reason the API would refuse this POST (`path` without its query): the one check the fake server runs
    on a live request and tests/replay_checks.py on a replayed one. count_tokens takes a messages body without
    max_tokens or stream."""
    if path == COUNT_TOKENS:
        if not isinstance(body, dict):
            return ["the body is not a JSON object"]
        extra = [f"{key}: Extra inputs are not permitted" for key in ("max_tokens", "stream") if key in body]
        return extra + request_problems(body | {"max_tokens": 1}, capabilities)
    if path == MESSAGES:
        return request_problems(body, capabilities)
    return [f"no route {path}"]


def request_problems(body: object, capabilities: Json | None = None) -> list[str]:
    """Every reason the API would refuse this /v1/messages body (empty: it would accept it).

    `capabilities`: the model's `ModelInfo.capabilities`, when the fake knows the model; a `thinking` type
    or an effort level it does not list is refused, as the real API refuses it.
    """
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems: list[str] = _option_problems(body, capabilities)
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: a non-empty string is required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        problems.append("max_tokens: a positive integer is required")
    problems += _system_problems(body.get("system"))
    tools = body.get("tools")
    problems += _tools_problems(tools)
    problems += strict_tools_problems(tools, capabilities) if isinstance(tools, list) else []
    if (
        capabilities is not None
        and defined_server_tools(tools)
        and not capabilities.get("server_tools", {}).get("web_search", {}).get("supported")
    ):
        problems.append("tools: web search and fetch are not supported for this model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("messages: a non-empty list is required")
        return problems
    problems += _messages_problems(messages, tools_defined=bool(tools), server_tools=defined_server_tools(tools))
    problems += _thinking_problems(body, messages)
    breakpoints = _count_cache_control(body)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        problems.append(f"cache_control: {breakpoints} breakpoints, at most {MAX_CACHE_BREAKPOINTS} are allowed")
    return problems


def _system_problems(system: object) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [] if system.strip() else ["system: text must be non-empty"]
    if not isinstance(system, list):
        return ["system: a string or a list of text blocks is required"]
    problems: list[str] = []
    for index, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            problems.append(f"system.{index}: only text blocks are allowed")
        elif not str(block.get("text", "")).strip():
            problems.append(f"system.{index}: text content blocks must contain non-whitespace text")
    return problems


def _tools_problems(tools: object) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ["tools: a list is required"]
    problems: list[str] = []
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            problems.append(f"tools.{index}: an object is required")
            continue
        server = server_tool_definition_problems(index, tool)
        if server is not None:
            problems += server
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            problems.append(f"tools.{index}.name: {name!r} does not match {TOOL_NAME.pattern}")
        elif name in seen:
            problems.append(f"tools.{index}.name: tool names must be unique, {name!r} is repeated")
        else:
            seen.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"tools.{index}.input_schema: an object schema with type 'object' is required")
    return problems


def _messages_problems(messages: list[Any], *, tools_defined: bool, server_tools: set[str]) -> list[str]:
    problems: list[str] = []
    seen_ids: set[str] = set()
    previous_uses: list[str] = []  # tool_use ids of the previous message, which this one must answer
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            problems.append(f"{where}: role must be user or assistant")
            previous_uses = []
            continue
        role = message["role"]
        expected = ROLES[index % 2]
        if role != expected:
            problems.append(f"{where}: roles must alternate starting with user; got {role}, expected {expected}")
        blocks = _blocks(message.get("content"), where, problems)
        for position, block in enumerate(blocks):
            problems += _block_problems(block, f"{where}.content.{position}", role, tools_defined, seen_ids)
        problems += server_block_problems(blocks, where, role, server_tools)
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
    blocks = [block for block in content if isinstance(block, dict)]
    if len(blocks) != len(content):
        problems.append(f"{where}: every content block must be an object")
    return blocks


def _block_problems(block: Json, where: str, role: str, tools_defined: bool, seen_ids: set[str]) -> list[str]:
    kind = block.get("type")
    if kind == "text":
        return [] if str(block.get("text", "")).strip() else [f"{where}: text blocks must contain non-whitespace text"]
    if kind == "image":
        return _image_problems(block, where)
    if kind == "document":
        return _document_problems(block, where, role)
    if kind == "tool_use":
        problems = [] if role == "assistant" else [f"{where}: tool_use blocks may only appear in assistant turns"]
        if not tools_defined:
            problems.append(f"{where}: requests which include tool_use or tool_result blocks must define tools")
        block_id = block.get("id")
        if not isinstance(block_id, str) or not TOOL_USE_ID.match(block_id):
            problems.append(f"{where}.id: {block_id!r} does not match {TOOL_USE_ID.pattern}")
        elif block_id in seen_ids:
            problems.append(f"{where}.id: tool_use ids must be unique, {block_id!r} is repeated")
        else:
            seen_ids.add(block_id)
        if not isinstance(block.get("name"), str) or not block["name"]:
            problems.append(f"{where}.name: a non-empty string is required")
        if not isinstance(block.get("input"), dict):
            problems.append(f"{where}.input: an object is required")
        return problems
    if kind in THINKING_TYPES:
        return [] if role == "assistant" else [f"{where}: {kind} blocks may only appear in assistant turns"]
    if kind in ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result"):
        return []  # tests/api_rules_web.py checks them, as a turn
    if kind == "tool_result":
        problems = [] if role == "user" else [f"{where}: tool_result blocks may only appear in user turns"]
        if not tools_defined:
            problems.append(f"{where}: requests which include tool_use or tool_result blocks must define tools")
        return problems + _result_content_problems(block.get("content"), where)
    return [f"{where}: unsupported block type {kind!r}"]


def _image_problems(block: Json, where: str) -> list[str]:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return [f"{where}.source: a base64 source is required"]
    problems: list[str] = []
    if source.get("media_type") not in IMAGE_MEDIA_TYPES:
        allowed = ", ".join(sorted(IMAGE_MEDIA_TYPES))
        problems.append(f"{where}.source.media_type: {source.get('media_type')!r} is not one of {allowed}")
    data = source.get("data")
    if not isinstance(data, str) or not data:
        problems.append(f"{where}.source.data: non-empty base64 data is required")
        return problems
    if len(data) > IMAGE_MAX_BASE64_BYTES:
        problems.append(f"{where}.source.data: image exceeds 5 MB maximum: {len(data)} bytes > 5242880 bytes")
        return problems
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        problems.append(f"{where}.source.data: the image data is not valid base64")
        return problems
    magic = IMAGE_MAGIC.get(str(source.get("media_type")), ())
    if magic and not any(raw.startswith(prefix) for prefix in magic):
        problems.append(f"{where}.source: image does not match the provided media type {source.get('media_type')}")
    return problems


def _document_problems(block: Json, where: str, role: str) -> list[str]:
    """A base64 PDF in a user turn: the bytes must be a PDF, within the 32 MB request limit."""
    source = block.get("source")
    problems = [] if role == "user" else [f"{where}: document blocks may only appear in user turns"]
    if not isinstance(source, dict) or source.get("type") != "base64" or source.get("media_type") != "application/pdf":
        return [*problems, f"{where}.source: a base64 source with media_type application/pdf is required"]
    data = str(source.get("data", ""))
    if len(data) > 32 * 1024 * 1024:
        return [*problems, f"{where}: request_too_large: the PDF is over 32 MB"]
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return [*problems, f"{where}.source.data: the PDF data is not valid base64"]
    return problems if raw.startswith(b"%PDF-") else [*problems, f"{where}.source: the PDF specified was not valid"]


def _result_content_problems(content: object, where: str) -> list[str]:
    if content is None or isinstance(content, str):
        return []  # a string (even empty) or no content is accepted for a tool_result
    if not isinstance(content, list):
        return [f"{where}.content: a string or a list of blocks is required"]
    problems: list[str] = []
    for index, part in enumerate(content):
        inner = f"{where}.content.{index}"
        if not isinstance(part, dict) or part.get("type") not in ("text", "image"):
            problems.append(f"{inner}: only text and image blocks are allowed in a tool_result")
        elif part["type"] == "text" and not str(part.get("text", "")).strip():
            problems.append(f"{inner}: text blocks must contain non-whitespace text")
        elif part["type"] == "image":
            problems += _image_problems(part, inner)
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


def _count_cache_control(body: Json) -> int:
    count = 0
    for tool in body.get("tools") or []:
        count += isinstance(tool, dict) and "cache_control" in tool
    system = body.get("system")
    for block in system if isinstance(system, list) else []:
        count += isinstance(block, dict) and "cache_control" in block
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            count += "cache_control" in block
            inner = block.get("content")
            for part in inner if isinstance(inner, list) else []:
                count += isinstance(part, dict) and "cache_control" in part
    return count


def _option_problems(body: Json, capabilities: Json | None) -> list[str]:
    problems: list[str] = []
    thinking = body.get("thinking")
    max_tokens = body.get("max_tokens")
    if thinking is not None:
        kind = thinking.get("type") if isinstance(thinking, dict) else None
        if kind not in ("adaptive", "enabled", "disabled", "between_tools"):
            problems.append(f"thinking.type: {kind!r} is not one of adaptive, enabled, disabled, between_tools")
        elif kind == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                problems.append("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            elif isinstance(max_tokens, int) and budget >= max_tokens:
                problems.append("`max_tokens` must be greater than `thinking.budget_tokens`")
        types = (capabilities or {}).get("thinking", {}).get("types", {})
        if capabilities is not None and not types.get(kind, {}).get("supported", False):
            problems.append(f"thinking.type.{kind} is not supported for this model")
    config = body.get("output_config")
    effort = config.get("effort") if isinstance(config, dict) else None
    if effort is not None:
        levels = (capabilities or {}).get("effort", {})
        if capabilities is not None and not (levels.get("supported") and levels.get(effort, {}).get("supported")):
            problems.append(f"output_config.effort: {effort!r} is not supported for this model")
    return problems


def _thinking_problems(body: Json, messages: list[Any]) -> list[str]:
    """Signatures must come back byte-identical and from this model; with thinking on (a budget), the assistant
    turn that the last tool results answer must start with its thinking."""
    model = str(body.get("model", ""))
    problems: list[str] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        for position, block in enumerate(content if isinstance(content, list) else []):
            where = f"messages.{index}.content.{position}"
            if not isinstance(block, dict) or block.get("type") not in THINKING_TYPES:
                continue
            if "cache_control" in block:
                problems.append(f"{where}: cache_control cannot be set on {block['type']} blocks")
            if block["type"] == "thinking" and block.get("signature") != sign(model, str(block.get("thinking"))):
                problems.append(f"{where}: Invalid `signature` in `thinking` block")
            if block["type"] == "redacted_thinking" and not _unsealed(model, block.get("data")):
                problems.append(f"{where}: Invalid `data` in `redacted_thinking` block")
    thinking = body.get("thinking")
    if not (isinstance(thinking, dict) and thinking.get("type") == "enabled") or len(messages) < 2:
        return problems
    last, before = messages[-1], messages[-2]
    answers = isinstance(last, dict) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in last.get("content") or []
    )
    blocks = before.get("content") if isinstance(before, dict) else None
    if answers and isinstance(blocks, list) and blocks and blocks[0].get("type") not in THINKING_TYPES:
        problems.append(
            f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{blocks[0].get('type')}`. When `thinking` is enabled, a final `assistant` message must start with "
            "a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
        )
    return problems


def _unsealed(model: str, data: object) -> bool:
    if not isinstance(data, str) or "." not in data:
        return False
    payload, mac = data.rsplit(".", 1)
    return mac == _mac(model, payload)
