"""`sprout-agent sessions rewind ID --to TURN`: session/rewinding.py's one rewind, from another process, on a
recorded session (locked meanwhile, so a running session refuses); what it did on stdout, as lines or JSON."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from sprout_agent.config.locations import Locations
from sprout_agent.core.errors import EXIT_CONFLICTS, EXIT_OK, EXIT_RUNTIME, UsageError
from sprout_agent.core.events import Event, Notice
from sprout_agent.session import checkpointing
from sprout_agent.session import index as session_index
from sprout_agent.session.rewinding import RewindOutcome, RewindRequest, rewind_to
from sprout_agent.session.store import SessionStore
from sprout_agent.trust.untrusted import printable, visible


def rewind_command(
    session: str,
    turn: int,
    *,
    files_only: bool,
    conversation_only: bool,
    include: Sequence[str],
    dry_run: bool,
    as_json: bool,
    locations: Locations | None = None,
) -> int:
    """0: done; EXIT_CONFLICTS: done, but files the user changed were left alone (listed); 1: files that could not
    be put back. A usage error (no such session or turn, the session in use) raises UsageError."""
    if files_only and conversation_only:
        raise UsageError("--files-only and --conversation-only exclude each other (neither: both are rewound)")
    where = locations or Locations.for_user()
    if where.sessions is None:
        raise UsageError("no sessions directory: nothing is recorded")
    path = session_index.find(where.sessions, session)
    transcript = SessionStore.existing(path)  # a running session holds it: a usage error, as a second resume
    try:
        header = session_index.header(path)
        cwd = str(header.get("cwd") or os.getcwd())
        request = RewindRequest(
            turn, not conversation_only, not files_only, tuple(_full(cwd, p) for p in include), dry_run
        )
        outcome = anyio.run(_rewind, where, path, transcript, str(header.get("session_id") or path.stem), cwd, request)
    finally:
        transcript.close()
    _report(outcome, request, as_json)
    if outcome.problems:
        return EXIT_RUNTIME
    return EXIT_CONFLICTS if outcome.conflicts else EXIT_OK


async def _rewind(
    where: Locations, path: Path, transcript: SessionStore, session_id: str, cwd: str, request: RewindRequest
) -> RewindOutcome:
    turns = checkpointing.recorded_turns(path)
    roots = checkpointing.recorded_roots(turns)
    tracker = checkpointing.tracker_for(where, session_id, cwd, roots, emit=_notice, transcript=transcript, turns=turns)
    if tracker is None:
        raise UsageError("no data directory: no checkpoints to rewind to")
    return await rewind_to(tracker, path, request)


def _notice(event: Event) -> None:
    if isinstance(event, Notice):
        print(f"sprout-agent: {printable(event.text)}", file=sys.stderr)


def _full(cwd: str, given: str) -> str:
    """An --include path as the conflicts list shows it (relative to the session's directory) or absolute; its
    directory resolved as the plan's paths are, the name itself not followed."""
    full = os.path.join(cwd, os.path.expanduser(given))
    return os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))


def _report(outcome: RewindOutcome, request: RewindRequest, as_json: bool) -> None:
    if as_json:
        print(json.dumps(outcome_record(outcome, request), ensure_ascii=False))
        return
    turn = outcome.turn
    if request.dry_run and outcome.preview:
        sys.stdout.write(visible(outcome.preview))
    verb = "would restore" if request.dry_run else "restored"
    if request.files:
        say(f"{verb} {len(outcome.restored)} file(s) to before turn {turn.number} ({turn.prompt[:60]!r})")
        for shown in outcome.restored:
            say(f"  {shown}")
    for conflict in outcome.conflicts:
        say(f"conflict, left alone: {conflict.path}: {conflict.reason} (--include {conflict.path} puts it back)")
    for problem in outcome.problems:
        say(f"not restored: {problem}")
    if outcome.session_id is not None:
        say(f"conversation forked at turn {turn.number}: resume it with `sprout-agent -r {outcome.session_id}`")
    elif request.conversation and request.dry_run:
        say(f"the conversation would be forked at turn {turn.number} (the session itself stays as it is)")
    if request.dry_run:
        say("dry run: nothing was changed")


def say(line: str) -> None:
    print(printable(line))  # paths and prompts are the repository's and the model's: escaped


def outcome_record(outcome: RewindOutcome, request: RewindRequest) -> dict[str, object]:
    return {
        "turn": outcome.turn.number,
        "prompt": outcome.prompt,
        "dry_run": request.dry_run,
        "files": request.files,
        "conversation": request.conversation,
        "restored": outcome.restored,
        "conflicts": [{"path": c.path, "reason": c.reason} for c in outcome.conflicts],
        "problems": outcome.problems,
        "forked_session_id": outcome.session_id,
        "preview": outcome.preview,
    }
