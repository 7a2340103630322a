"""`sprout-agent replay`: where a session re-run with today's tools, hooks and servers went another way than its
recording: a tool whose result changed, a call refused, a hook that objects now, a request the recording lacks."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sprout_agent.model.cassettes.compare import first_difference, shown
from sprout_agent.model.cassettes.format import Exchange, Json
from sprout_agent.model.cassettes.player import Answered


@dataclass(frozen=True, slots=True)
class Divergence:
    exchange: int | None  # the recorded exchange it shows in; None: past the recording, or the run as a whole
    kind: str  # tool result | refused | hook | request | ended
    text: str


@dataclass
class Today:
    """What today's run did that the recording may not have: from the session's events."""

    refused: set[str] = field(default_factory=set[str])  # tool call ids the permission policy refused
    objections: list[tuple[str, str, str]] = field(default_factory=list[tuple[str, str, str]])  # hook, server, text
    failure: str | None = None  # how the run ended, when it failed


def divergences(answered: Sequence[Answered], unanswered: Sequence[Exchange], today: Today) -> list[Divergence]:
    """Each difference once: a block of the conversation that differs shows again in every later request, and is
    reported at the first."""
    found: list[Divergence] = []
    seen: set[str] = set()
    recorded_text = "".join(json.dumps(a.exchange.request, ensure_ascii=False) for a in answered)
    objections = [o for o in today.objections if json.dumps(o[2], ensure_ascii=False)[1:-1] not in recorded_text]
    for answer in answered:
        for path, old, new in _differing_blocks(answer.recorded, answer.sent):
            if path not in seen:
                seen.add(path)
                found.append(_described(answer, path, old, new, today, objections))
    found += [
        Divergence(None, "hook", f"{hook} from {server} objects now: {shown(text)}")
        for hook, server, text in objections
    ]
    if today.failure is not None:
        found.append(Divergence(None, "ended", today.failure))
    if unanswered:
        first = unanswered[0]
        found.append(Divergence(first.n, "ended", f"the run ended with {len(unanswered)} recorded request(s) not made"))
    return found


def _differing_blocks(recorded: Json, sent: Json) -> Iterator[tuple[str, object, object]]:
    """(path, recorded, sent) of each message block that differs, and of each other part of the request."""
    old_messages = _messages(recorded)
    new_messages = _messages(sent)
    for i in range(max(len(old_messages), len(new_messages))):
        old_blocks = _blocks(old_messages[i] if i < len(old_messages) else None)
        new_blocks = _blocks(new_messages[i] if i < len(new_messages) else None)
        for j in range(max(len(old_blocks), len(new_blocks))):
            old = old_blocks[j] if j < len(old_blocks) else None
            new = new_blocks[j] if j < len(new_blocks) else None
            if old != new:
                yield f"body.messages[{i}].content[{j}]", old, new
    rest_old = {**recorded, "body": {k: v for k, v in _body(recorded).items() if k != "messages"}}
    rest_new = {**sent, "body": {k: v for k, v in _body(sent).items() if k != "messages"}}
    if (difference := first_difference(rest_old, rest_new)) is not None:
        yield difference


def _described(
    answer: Answered, path: str, old: object, new: object, today: Today, objections: list[Any]
) -> Divergence:
    n = answer.exchange.n
    block = _block_at(answer.request, path)
    if block is None or block.get("type") != "tool_result":
        return Divergence(n, "request", f"at {path}: recorded {_short(old)}, sent {_short(new)}")
    call_id = str(block.get("tool_use_id"))
    use = _tool_use(answer.request, call_id)
    call = f"{use.get('name', '?')} {shown(use.get('input', {}))}"
    now = _text(new)
    for objection in list(objections):
        if objection[2] and objection[2] in now:
            objections.remove(objection)
            return Divergence(
                n, "hook", f"{objection[0]} from {objection[1]} objects now to {call}: {shown(objection[2])}"
            )
    kind = "refused" if call_id in today.refused else "tool result"
    what = "refused now" if kind == "refused" else "result changed"
    return Divergence(n, kind, f"{call}: {what}: recorded {shown(_text(old))}, now {shown(now)}")


def _short(value: object) -> str:
    return "nothing" if value is None else shown(value)


def _body(request: Json) -> Json:
    body = request.get("body")
    return cast(Json, body) if isinstance(body, dict) else {}


def _messages(request: Json) -> list[Any]:
    messages = _body(request).get("messages")
    return cast(list[Any], messages) if isinstance(messages, list) else []


def _blocks(message: object) -> list[Any]:
    content = cast(Json, message).get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    return cast(list[Any], content) if isinstance(content, list) else []


def _block_at(request: Json, path: str) -> Json | None:
    """The block `body.messages[i].content[j]` names in the request as sent."""
    try:
        i, j = (int(part.split("]")[0]) for part in path.split("[")[1:3])
        block = _blocks(_messages(request)[i])[j]
    except (ValueError, IndexError):
        return None
    return cast(Json, block) if isinstance(block, dict) else None


def _tool_use(request: Json, call_id: str) -> Json:
    for message in _messages(request):
        for block in _blocks(message):
            if isinstance(block, dict) and cast(Json, block).get("id") == call_id:
                return cast(Json, block)
    return {}


def _text(block: object) -> str:
    """A tool result's text, however its content is shaped."""
    if not isinstance(block, dict):
        return "" if block is None else str(block)
    content = cast(Json, block).get("content")
    if isinstance(content, str):
        return content
    parts = cast(list[Any], content) if isinstance(content, list) else []
    return "".join(str(cast(Json, p).get("text", "")) for p in parts if isinstance(p, dict))
