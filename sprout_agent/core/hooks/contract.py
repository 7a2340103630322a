"""The hook contract shared by the agent and the hook-author kit: the hook names, the context each one
may declare, the allowlist, and how a hook's arguments and answer are shaped (docs/hooks.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from sprout_agent.core.protocols import ToolSpec

STOP = "_Stop"
POST_COMPACT = "_PostCompact"
SESSION_START = "_SessionStart"
USER_PROMPT_SUBMIT = "_UserPromptSubmit"
PRE_TOOL_USE = "_PreToolUse"
POST_TOOL_USE = "_PostToolUse"
SESSION_END = "_SessionEnd"
SUBAGENT_START = "_SubagentStart"
SUBAGENT_STOP = "_SubagentStop"
# Off unless SPROUT_AGENT_TOOL_HOOKS=1: they overlap MCP Interceptors (SEP-2624), see docs/hooks.md.
TOOL_HOOKS = frozenset({PRE_TOOL_USE, POST_TOOL_USE})
HOOK_TEXT_MAX_CHARS = 16 * 1024  # documented in docs/hooks.md
RESULT_TEXT_MAX_CHARS = 4096  # `result_text` given to _PostToolUse: a hook needs the gist, not the whole
CONSECUTIVE_TIMEOUTS_TO_KILL = 2
# The ids of the tool_use/tool_result pairs that carry hook output in the history (ACP replay looks for them).
HOOK_CALL_ID_PREFIX = "sprout_hook_"

_COMMON = frozenset({"session_id", "cwd"})
# What each hook point may ask for by declaring it as a property of its inputSchema (docs/hooks.md).
HOOK_CONTEXT: Mapping[str, frozenset[str]] = {
    STOP: _COMMON | {"objections_so_far", "rejections_left", "last_assistant_message", "trigger"},
    POST_COMPACT: _COMMON | {"last_assistant_message", "trigger"},
    SESSION_START: _COMMON | {"source"},
    USER_PROMPT_SUBMIT: _COMMON | {"prompt"},
    PRE_TOOL_USE: _COMMON | {"tool_name", "arguments"},
    POST_TOOL_USE: _COMMON | {"tool_name", "arguments", "result_text", "is_error"},
    SESSION_END: _COMMON | {"reason"},
    # A subagent's points: `session_id` is the parent session's; `agent_id` names the child (its transcript).
    SUBAGENT_START: _COMMON | {"agent_type", "agent_id", "description", "prompt"},
    SUBAGENT_STOP: _COMMON
    | {"agent_type", "agent_id", "objections_so_far", "rejections_left", "last_assistant_message", "trigger"},
}
HOOK_POINTS = tuple(HOOK_CONTEXT)  # every hook the agent calls, in the order the docs list them
CONTEXT_FIELDS = frozenset(name for names in HOOK_CONTEXT.values() for name in names)


def is_hook(spec: ToolSpec) -> bool:
    """A tool whose bare name starts with `_` is a hook: never offered to the model, never callable by it."""
    return spec.tool.startswith("_")


@dataclass(frozen=True, slots=True)
class Allowlist:
    everything: bool
    names: frozenset[str]

    def allows(self, server: str) -> bool:
        return self.everything or server in self.names


def parse_allowlist(raw: str | None) -> Allowlist | None:
    """`MCP_HOOK_SERVERS`: `*` = every server, else comma-separated names; None (hooks off) if nothing is left."""
    names = [name.strip() for name in (raw or "").split(",")]
    names = [name for name in names if name]
    if not names:
        return None
    if names == ["*"]:
        return Allowlist(True, frozenset())
    return Allowlist(False, frozenset(names))


def declared_inputs(spec: ToolSpec) -> list[str]:
    """The property names a hook's inputSchema declares, sorted; [] when it declares none."""
    properties = spec.input_schema.get("properties")
    if not isinstance(properties, dict):
        return []
    return sorted(str(name) for name in properties)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def fill_context(spec: ToolSpec, context: Mapping[str, object]) -> dict[str, object]:
    """The inputs the hook declared from the documented set; a hook that declares none gets `{}`."""
    return {name: context[name] for name in declared_inputs(spec) if name in CONTEXT_FIELDS and name in context}


def truncate(text: str, limit: int = HOOK_TEXT_MAX_CHARS) -> str:
    """`text` within `limit` characters: head and tail kept, the middle replaced by a marker."""
    if len(text) <= limit:
        return text
    marker = f"\n… [{len(text) - limit} characters elided] …\n"
    keep = (limit - len(marker)) // 2
    return text[:keep] + marker + text[-keep:]


def blocked(text: str) -> str | None:
    """A `_SubagentStart` answer that refuses the child: `{"decision": "block", "reason": "…"}` (Claude Code's hook
    output), as the reason; None for any other answer, which is context for the child."""
    try:
        answer = json.loads(text)
    except ValueError:
        return None
    if not isinstance(answer, dict) or answer.get("decision") != "block":  # pyright: ignore[reportUnknownMemberType]
        return None
    reason: object = answer.get("reason", "")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return reason if isinstance(reason, str) else json.dumps(reason)


def answer_kind(hook: str) -> str:
    """What an answer of `hook` is (a span's decision); `_SubagentStart`'s may also refuse (told by its JSON)."""
    return (
        "objection" if hook in (STOP, PRE_TOOL_USE, SUBAGENT_STOP) else "logged" if hook == SESSION_END else "context"
    )
