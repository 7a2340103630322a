"""A running session going on in the fork a conversation rewind made (docs/rewind.md): the agent's history,
recorder and id, and the checkpoints' turns, follow the new session; the old one is closed, resumable by its id.
One for every face that rewinds a conversation while it runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sprout_agent.checkpoints.timeline import turns_from
from sprout_agent.core.messages import Text
from sprout_agent.session import branches, store
from sprout_agent.session.rewinding import RewindOutcome
from sprout_agent.session.runtime import Runtime


def continue_in_fork(runtime: Runtime, outcome: RewindOutcome) -> Runtime:
    """The runtime as it goes on in `outcome`'s fork (the same one when the conversation was not rewound). The
    fork's transcript is opened (and locked) before the old one is let go: a failure leaves the session as it was."""
    if outcome.forked is None or outcome.session_id is None:
        return runtime
    loaded = store.load(outcome.forked)
    recorder = store.SessionStore.resuming(loaded)
    agent = runtime.agent
    agent.recorder = recorder
    agent.session_id = outcome.session_id
    agent.load(loaded.history, "resume")  # the fork's file holds exactly this history: nothing is written
    # The fork's spend is what its own conversation cost: what was spent up to the fork (its last `cost` record,
    # copied), then what this run spends from here; never the rewound turns, which are the old session's.
    agent.ledger.earlier = loaded.cost_usd - agent.ledger.cost
    if runtime.checkpoints is not None:
        turns = turns_from(branches.records_at(outcome.forked))
        runtime.checkpoints.follow(outcome.session_id, recorder.mark, turns)
    if runtime.transcript is not None:
        runtime.transcript.close()
    return replace(runtime, session_id=outcome.session_id, transcript=recorder)


def sent_prompt(path: Path, offset: int) -> str | None:
    """The text of the prompt a turn sent, whole: the first user message after the turn's record at `offset`
    (the record keeps only its start). None when it cannot be read (a turn a hook refused sent none)."""
    try:
        for at, record in branches.records_at(path):
            if at <= offset:
                continue
            if record.get("type") == "turn":
                return None  # the next turn's: this one sent nothing
            if record.get("type") == "message" and record["message"].get("role") == "user":
                message = store.decode_message(record["message"])
                return next((block.text for block in message.content if isinstance(block, Text)), None)
    except (OSError, KeyError, TypeError, ValueError, AttributeError):
        return None
    return None
