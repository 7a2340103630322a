"""The SDKs' file checkpointing (`enable_file_checkpointing` / `enableFileCheckpointing`): `rewind_files` puts the
files back as they were when a user message was sent, through session/rewinding.py's one rewind (files only).

The message is named by the uuid of its `--replay-user-messages` echo; each uuid is recorded in the transcript
with its turn (after the turn's own record, so a fork before that turn leaves it out), so a resumed session can
rewind to a message of an earlier run, as the SDKs' documentation shows. The answer is Claude Code's shape:
{canRewind, error?, filesChanged?, insertions?, deletions?}, and ours: conflicts (files the user changed since,
left alone)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from sprout_agent.core.errors import SproutError, StoreError
from sprout_agent.faces.sdk.control import Body, ControlError
from sprout_agent.session import branches
from sprout_agent.session.rewinding import RewindOutcome, RewindRequest, rewind_to
from sprout_agent.session.runtime import Runtime

ENABLE = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"  # what the SDKs set when their option is on
RECORD = "sdk_user_message"  # {"type": RECORD, "uuid", "turn"} in the transcript
NOT_ENABLED = "File rewinding is not enabled."  # Claude Code's words when the SDK did not turn it on
NO_CHECKPOINT = "No file checkpoint found for this message."


class SdkRewind:
    def __init__(self, enabled: bool, runtime: Callable[[], Runtime | None], turn_running: Callable[[], bool]) -> None:
        self.enabled = enabled  # the SDK asked for it (ENABLE), and the session takes checkpoints
        self.runtime = runtime
        self.turn_running = turn_running
        self.turns: dict[str, int] = {}  # a replayed user message's uuid → the turn it started (this run's)

    def remember(self, line_uuid: str, turn: int) -> None:
        """The message `line_uuid` started `turn`: kept, and recorded for a later run of the session."""
        self.turns[line_uuid] = turn
        runtime = self.runtime()
        if runtime is None or runtime.transcript is None:
            return
        with contextlib.suppress(OSError, StoreError):  # this run still knows it; only a resumed one would not
            runtime.transcript.mark({"type": RECORD, "uuid": line_uuid, "turn": turn})

    async def rewind_files(self, request: Body) -> Body:
        """As Claude Code answers: success when the files can be (dry_run: could be) put back, else an error
        answer (the SDKs raise it), except for dry_run, which always answers its result."""
        dry_run = request.get("dry_run") is True
        try:
            answer = await self._rewind(str(request.get("user_message_id") or ""), dry_run)
        except SproutError as error:
            answer = {"canRewind": False, "error": str(error)}
        if answer["canRewind"] or dry_run:
            return answer
        raise ControlError(str(answer["error"]))

    async def _rewind(self, line_uuid: str, dry_run: bool) -> Body:
        runtime = self.runtime()
        tracker = runtime.checkpoints if runtime is not None else None
        if runtime is None or tracker is None or not self.enabled:
            return {"canRewind": False, "error": NOT_ENABLED}
        if self.turn_running():
            return {"canRewind": False, "error": "a turn is running: rewind after its result"}
        path = runtime.transcript.path if runtime.transcript is not None else None
        turn = self.turns.get(line_uuid) or _recorded(path, line_uuid)
        if turn is None:
            return {"canRewind": False, "error": NO_CHECKPOINT}
        outcome = await rewind_to(tracker, path, RewindRequest(turn, conversation=False, dry_run=dry_run))
        if outcome.problems:
            return {"canRewind": False, "error": "could not put back: " + "; ".join(outcome.problems)}
        return _answer(outcome, str(runtime.prepared.options.cwd))


def _recorded(transcript: Path | None, line_uuid: str) -> int | None:
    """The turn an earlier run of this session recorded for the message."""
    if transcript is None or not line_uuid or not transcript.exists():
        return None
    found = None
    for _offset, record in branches.records_at(transcript):
        if record.get("type") == RECORD and record.get("uuid") == line_uuid and isinstance(record.get("turn"), int):
            found = int(record["turn"])
    return found


def _answer(outcome: RewindOutcome, cwd: str) -> Body:
    insertions = deletions = 0
    for line in outcome.preview.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            insertions += 1
        elif line.startswith("-") and not line.startswith("---"):
            deletions += 1
    return {
        "canRewind": True,
        "filesChanged": [os.path.join(cwd, shown) for shown in outcome.restored],  # absolute, as Claude Code's
        "insertions": insertions,
        "deletions": deletions,
        "conflicts": [{"path": os.path.join(cwd, c.path), "reason": c.reason} for c in outcome.conflicts],
    }
