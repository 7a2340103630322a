"""A transcript as an ATIF trajectory (the Agent Trajectory Interchange Format, ATIF-v1.7, which Harbor reads):
a step per prompt and per model reply, each reply's tool calls with their results as its observation, tokens and
cost per reply from its `reply` record, the session's totals (`sessions export ID --atif`)."""

from __future__ import annotations

import json
from typing import Any, cast

from sprout_agent import __version__
from sprout_agent.core.errors import UsageError
from sprout_agent.session.recorded import Json, Recorded, Reply, Said, iso, text_of

SCHEMA_VERSION = "ATIF-v1.7"
AGENT_NAME = "sprout-agent"


def trajectory(recorded: Recorded) -> Json:
    """The ATIF trajectory of `recorded`; a UsageError when it holds no message (ATIF needs one step)."""
    steps: list[Json] = []
    calls: dict[str, Json] = {}  # a call's id → the step that made it, where its result goes
    for said in recorded.said:
        if said.role == "assistant":
            steps.append(_agent_step(said, recorded.model, calls))
        elif results := [b for b in said.content if b.get("type") == "tool_result"]:
            _observe(results, calls)
        if said.role == "user" and (text := text_of(said.content)):
            steps.append({"source": "user", "message": text, "timestamp": iso(said.time)})
    if not steps:
        raise UsageError(f"session {recorded.session_id} has no messages to export")
    for n, step in enumerate(steps, 1):
        step["step_id"] = n
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": recorded.session_id,
        "agent": {"name": AGENT_NAME, "version": __version__, "model_name": recorded.model or None},
        "steps": [_without_none(step) for step in steps],
        "final_metrics": _final_metrics(recorded, len(steps)),
        "extra": {"cwd": recorded.cwd} if recorded.cwd else None,
    }


def to_json(recorded: Recorded) -> str:
    return json.dumps(_without_none(trajectory(recorded)), ensure_ascii=False, indent=1)


def _agent_step(said: Said, model: str, calls: dict[str, Json]) -> Json:
    thinking = [b for b in said.content if b.get("type") == "thinking"]
    step: Json = {
        "source": "agent",
        "timestamp": iso(said.time),
        "message": text_of(said.content),
        "model_name": (said.reply.model if said.reply is not None else "") or model or None,
        "reasoning_content": "\n\n".join(str(b.get("thinking", "")) for b in thinking) or None,
    }
    uses = [b for b in said.content if b.get("type") == "tool_use"]
    if uses:
        step["tool_calls"] = [_call(b) for b in uses]
        calls.update({str(b.get("id", "")): step for b in uses})
    if said.reply is not None:
        step["metrics"] = _metrics(said.reply)
        step["llm_call_count"] = 1
        step["extra"] = {"message_id": said.reply.message_id, "stop_reason": said.reply.stop_reason}
    return step


def _call(block: Json) -> Json:
    arguments: Any = block.get("input")
    return {
        "tool_call_id": str(block.get("id", "")),
        "function_name": str(block.get("name", "")),
        "arguments": arguments if isinstance(arguments, dict) else {"input": arguments},
    }


def _observe(results: list[Json], calls: dict[str, Json]) -> None:
    """Each result joins the observation of the step that made its call (a result without one is left out: ATIF
    ties a result to a call of its own step)."""
    for result in results:
        call_id = str(result.get("tool_use_id", ""))
        step = calls.pop(call_id, None)
        if step is None:
            continue
        parts: object = result.get("content")
        listed = cast(list[object], parts) if isinstance(parts, list) else []
        content = text_of(cast(Json, p) for p in listed if isinstance(p, dict))
        entry: Json = {"source_call_id": call_id, "content": content}
        if result.get("is_error"):
            entry["extra"] = {"is_error": True}
        step.setdefault("observation", {"results": []})["results"].append(entry)


def _metrics(reply: Reply) -> Json:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "cached_tokens": reply.cached_tokens,
        "cost_usd": reply.cost_usd,
        "extra": {
            "cache_creation_input_tokens": reply.usage.get("cache_creation_input_tokens", 0),
            "cache_read_input_tokens": reply.cached_tokens,
        },
    }


def _final_metrics(recorded: Recorded, steps: int) -> Json:
    """Totals over every recorded reply (one left without a message, cut short, has no step but counts); the cost
    is the session's own total when the transcript has one (compaction's requests included)."""
    replies = recorded.replies
    cost = recorded.cost_usd if recorded.cost_usd is not None else sum(r.cost_usd for r in replies)
    return {
        "total_prompt_tokens": sum(r.prompt_tokens for r in replies),
        "total_completion_tokens": sum(r.completion_tokens for r in replies),
        "total_cached_tokens": sum(r.cached_tokens for r in replies),
        "total_cost_usd": round(cost, 8),
        "total_steps": steps,
    }


def _without_none(data: Json) -> Json:
    return {k: v for k, v in data.items() if v is not None}
