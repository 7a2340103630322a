"""One rewind, shared by /rewind in the REPL, `sessions rewind` and the SDK's `rewind_files` (docs/rewind.md):
the files put back to the checkpoint before a turn (conflicts listed and left alone unless included), the
conversation forked at that turn's start (the old session stays resumable by its id), or both."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from sprout_agent.checkpoints import rewind
from sprout_agent.checkpoints.timeline import Turn
from sprout_agent.checkpoints.tracker import Tracker
from sprout_agent.core.errors import UsageError
from sprout_agent.session import branches


@dataclass(frozen=True, slots=True)
class RewindRequest:
    turn: int
    files: bool = True
    conversation: bool = True
    include: Collection[str] = ()  # conflicting files (full paths) to put back all the same
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class Conflict:
    path: str  # as shown: relative to the working directory when inside it
    reason: str


@dataclass
class RewindOutcome:
    turn: Turn
    preview: str = ""  # the diff the files' rewind applies (or would, with dry_run)
    restored: list[str] = field(default_factory=list[str])  # files put back (or that would be)
    conflicts: list[Conflict] = field(default_factory=list[Conflict])  # left alone: the user changed them
    problems: list[str] = field(default_factory=list[str])  # files that could not be put back
    forked: Path | None = None  # the new session's transcript, when the conversation was rewound
    session_id: str | None = None  # its id

    @property
    def prompt(self) -> str:
        """The rewound turn's prompt, to put back in the input (at most timeline.PROMPT_CHARS of it)."""
        return self.turn.prompt


def find_turn(tracker: Tracker, number: int) -> Turn:
    for turn in tracker.turns:
        if turn.number == number:
            return turn
    known = ", ".join(str(t.number) for t in tracker.turns) or "none"
    raise UsageError(f"no turn {number} in this session (turns: {known})")


async def rewind_to(tracker: Tracker, transcript: Path | None, request: RewindRequest) -> RewindOutcome:
    """Plans and (unless dry_run) carries out the request. The files go first: a conversation forked after a
    failed file rewind would say the files are back when they are not."""
    turn = find_turn(tracker, request.turn)
    outcome = RewindOutcome(turn)
    if request.files:
        plan, stores = await tracker.plan_rewind(turn.number)
        chosen = plan.chosen(request.include)
        outcome.preview = rewind.preview(plan, stores, chosen)
        outcome.restored = [tracker.shown(r.full) for r in chosen]
        included = set(request.include)
        outcome.conflicts = [
            Conflict(tracker.shown(c.restore.full), c.reason) for c in plan.conflicts if c.restore.full not in included
        ]
        if not request.dry_run and chosen:
            _step, outcome.problems = await tracker.apply_rewind(chosen, plan)
    if request.conversation and not request.dry_run:
        if transcript is None or not transcript.exists():
            raise UsageError("this session has no transcript to rewind (sessions are not recorded)")
        outcome.session_id = str(uuid.uuid4())
        outcome.forked = branches.fork(transcript, turn.offset, outcome.session_id)
    return outcome
