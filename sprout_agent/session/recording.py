"""What the transcript records besides the conversation, from the loop's events: each model reply's usage, model
and cost (a `reply` record, just before the reply's message: the exports' tokens per step), the session's spend
after each turn, and then, when CLAUDE_CONFIG_DIR is set, the Claude Code form of the transcript."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sprout_agent.core.events import AssistantMessage, Event, Notice, TurnFinished
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.messages import Usage
from sprout_agent.core.protocols import Recorder
from sprout_agent.session import claude_transcript, store
from sprout_agent.session.recorded import REPLY


def recording(
    emit: Callable[[Event], None],
    transcript_of: Callable[[], Recorder | None],
    ledger: Ledger,
    environ: Mapping[str, str],
) -> Callable[[Event], None]:
    """`emit`, recording into the agent's transcript of the moment (`transcript_of`: a rewind's fork goes on in
    its own, session/continuing.py); the session's spend lets a resumed session's cost go on from it."""
    mirrored = [False]  # a failing mirror is reported once, not after every turn

    def record(event: Event) -> None:
        emit(event)
        transcript = transcript_of()
        if not isinstance(transcript, store.SessionStore):
            return
        if isinstance(event, AssistantMessage):
            transcript.mark(reply_record(event))
        elif isinstance(event, TurnFinished):
            transcript.spent(ledger.earlier + ledger.cost)
            if transcript.path.exists():
                _mirror(transcript, environ, emit, mirrored)

    return record


def reply_record(event: AssistantMessage) -> dict[str, object]:
    return {
        "type": REPLY,
        "message_id": event.message_id,
        "model": event.model,
        "usage": usage_json(event.usage),
        "cost_usd": round(event.cost_usd, 8),
        "stop_reason": event.stop_reason,
    }


def usage_json(usage: Usage) -> dict[str, int]:
    """The Messages API's names for a reply's usage."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
    }


def _mirror(
    transcript: store.SessionStore, environ: Mapping[str, str], emit: Callable[[Event], None], failed: list[bool]
) -> None:
    try:
        claude_transcript.mirror(transcript.path, environ)
    except OSError as error:
        if not failed[0]:
            failed[0] = True
            where = environ.get(claude_transcript.CONFIG_DIR_ENV, "")
            emit(Notice(f"cannot write the Claude Code transcript under {where}: {error}", "warning"))
