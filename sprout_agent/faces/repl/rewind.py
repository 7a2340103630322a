"""/rewind in the REPL (and Esc Esc on an empty prompt; docs/interactive.md): the questions and the preview
(terminal/rewind_view.py), then the one rewind (session/rewinding.py); when the conversation was rewound the REPL
goes on in the fork, with the rewound prompt back in the input for editing."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from sprout_agent.checkpoints.git_store import CheckpointError
from sprout_agent.checkpoints.tracker import Tracker
from sprout_agent.faces.terminal.input import TurnKeys
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.session.continuing import continue_in_fork, sent_prompt
from sprout_agent.session.rewinding import RewindOutcome, RewindRequest, rewind_to
from sprout_agent.session.runtime import Runtime
from sprout_agent.trust.untrusted import printable

OFF = "nothing to rewind: checkpoints are off (SPROUT_AGENT_CHECKPOINTS=off, or no user data directory)"


async def rewind_command(
    runtime: Runtime, renderer: TerminalRenderer, keys: TurnKeys, typed: dict[int, str]
) -> Runtime:
    """Asks, previews, rewinds; the runtime the REPL goes on with (a new session after a conversation rewind).
    `typed`: what the person typed for each of this process's turns (put back as typed, mentions unexpanded)."""
    tracker = runtime.checkpoints
    if tracker is None or not tracker.turns:
        renderer.say(OFF if tracker is None else "nothing to rewind yet: this session has no turns", "yellow")
        return runtime
    transcript = runtime.transcript.path if runtime.transcript is not None else None
    old = runtime.session_id
    try:
        async with keys.paused():  # the questions read the keys themselves
            request = await _ask(renderer, tracker, transcript, old)
        if request is None:
            renderer.say("  → nothing rewound", "dim")
            return runtime
        outcome: RewindOutcome | None = None
        with anyio.CancelScope(shield=True):  # confirmed: a Ctrl-C now would leave it half done
            outcome = await rewind_to(tracker, transcript, request)
            runtime = continue_in_fork(runtime, outcome)
    except CheckpointError as error:  # the store cannot be read (a pruned object, a removed repository)
        renderer.say(f"cannot rewind: {error}", "red")
        return runtime
    if outcome is None:
        return runtime
    _report(renderer, outcome, request.files)
    if outcome.forked is not None and transcript is not None:
        renderer.say(f"the conversation is back to before turn {outcome.turn.number}, in session {runtime.session_id}")
        renderer.say(f"resume the one before: sprout-agent -r {old}", "dim")  # one line in 80 columns: copyable
        _prompt_back(keys, typed, outcome, transcript)
    return runtime


def _prompt_back(keys: TurnKeys, typed: dict[int, str], outcome: RewindOutcome, transcript: Path) -> None:
    """The rewound turn's prompt in the next input, to edit (as typed when this process ran it, else as sent)."""
    number = outcome.turn.number
    if outcome.turn.kind == "turn":
        prompt = typed.get(number) or sent_prompt(transcript, outcome.turn.offset) or outcome.prompt
        keys.reader.type_ahead = prompt.replace("\r", "")  # Ctrl-C at the prompt clears it
    for left in [n for n in typed if n >= number]:
        del typed[left]  # the fork numbers its next turns from here


async def _ask(
    renderer: TerminalRenderer, tracker: Tracker, transcript: Path | None, session_id: str
) -> RewindRequest | None:
    from sprout_agent.faces.terminal import rewind_view as view  # prompt_toolkit's full-app parts: on first use

    turn = await view.pick_turn(renderer, tracker.turns)
    scope = (
        await view.pick_scope(renderer, transcript is not None and transcript.exists()) if turn is not None else None
    )
    if turn is None or scope is None:
        return None
    files, conversation = scope
    planned = await rewind_to(tracker, transcript, RewindRequest(turn.number, files, conversation, dry_run=True))
    if not conversation and not planned.restored and not planned.conflicts:
        renderer.say(f"the files are as they were before turn {turn.number}: nothing to put back", "dim")
        return None
    renderer.show(view.preview(planned, scope, session_id))
    answer = await view.confirm(renderer, planned)
    if answer is None:
        return None
    include = [_full(tracker, c.path) for c in planned.conflicts] if answer == "include" else []
    return RewindRequest(turn.number, files, conversation, include)


def _full(tracker: Tracker, shown: str) -> str:
    """A conflict's path as the plan names it (the tracker shows it relative to the working directory)."""
    return os.path.normpath(os.path.join(tracker.cwd, shown))


def _report(renderer: TerminalRenderer, outcome: RewindOutcome, files: bool) -> None:
    if files:
        count = len(outcome.restored) - len(outcome.problems)
        renderer.say(f"put back {count} file{'' if count == 1 else 's'} as before turn {outcome.turn.number}")
    if outcome.conflicts:
        kept = ", ".join(printable(c.path) for c in outcome.conflicts)
        renderer.say(f"left as you changed them: {kept}", "yellow")
    for problem in outcome.problems:
        renderer.say(f"not put back: {problem}", "red")
