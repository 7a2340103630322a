"""`sprout-agent sessions`: the recorded sessions, newest activity first, as lines or a JSON array; one session's
turns (`sessions turns`, what `sessions rewind --to` takes); `sessions prune`, old sessions and their checkpoints."""

from __future__ import annotations

import json
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sprout_agent.checkpoints.timeline import Turn
from sprout_agent.config.locations import Locations
from sprout_agent.core.errors import EXIT_OK, EXIT_RUNTIME, UsageError
from sprout_agent.core.events import TurnChanges
from sprout_agent.faces.headless.stream_lines import checkpoint_record
from sprout_agent.session import checkpointing
from sprout_agent.session import index as session_index
from sprout_agent.session.store import SessionStore
from sprout_agent.trust.untrusted import printable


def list_command(*, here: bool, limit: int | None, as_json: bool) -> int:
    def skipped(path: Path, reason: str) -> None:
        print(f"sprout-agent: warning: skipped {path}: {reason}", file=sys.stderr)

    sessions = Locations.for_user().sessions
    assert sessions is not None
    found = session_index.list_sessions(sessions, str(Path.cwd().resolve()) if here else None, skipped=skipped)
    found = found[:limit] if limit else found
    if as_json:
        rows = [
            {
                "session_id": s.session_id,
                "cwd": s.cwd,
                "first_prompt": s.first_prompt,
                "turns": s.turns,
                "last_activity": datetime.fromtimestamp(s.last_activity, UTC).isoformat(),
                "path": str(s.path),
            }
            for s in found
        ]
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    if not found:
        print("no sessions recorded yet", file=sys.stderr)
    for s in found:
        when = datetime.fromtimestamp(s.last_activity).strftime("%Y-%m-%d %H:%M")
        print(f"{s.session_id}  {when}  {s.turns:>3} turns  {s.cwd}  {s.first_prompt}")
    return 0


def _sessions_dir(locations: Locations | None) -> tuple[Locations, Path]:
    where = locations or Locations.for_user()
    if where.sessions is None:
        raise UsageError("no sessions directory: nothing is recorded")
    return where, where.sessions


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def turn_record(turn: Turn) -> dict[str, object]:
    """One turn for scripts; `checkpoint` has the shape of stream-json's `result.checkpoint` (null: none taken)."""
    changes = TurnChanges(turn.number, turn.files, turn.skipped) if turn.before else None
    fields: dict[str, object] = {"turn": turn.number, "kind": turn.kind, "time": _iso(turn.time), "prompt": turn.prompt}
    return fields | {"checkpoint": checkpoint_record(changes)}


def turns_command(session: str, *, as_json: bool, locations: Locations | None = None) -> int:
    """The session's turns, oldest first: what `sessions rewind ID --to TURN` can go back to."""
    _, directory = _sessions_dir(locations)
    turns = checkpointing.recorded_turns(session_index.find(directory, session))
    if as_json:
        print(json.dumps([turn_record(turn) for turn in turns], ensure_ascii=False))
        return EXIT_OK
    if not turns:
        print("no turns recorded (a session from before checkpoints, or one that never got a prompt)", file=sys.stderr)
    for turn in turns:
        when = datetime.fromtimestamp(turn.time).strftime("%Y-%m-%d %H:%M")
        what = f"{len(turn.files)} file(s) +{turn.added} -{turn.removed}" if turn.before else "no checkpoint"
        label = turn.prompt if turn.kind == "turn" else f"[{turn.kind}] {turn.prompt}"
        print(printable(f"{turn.number:>4}  {when}  {what:<24}  {' '.join(label.split())[:80]}"))
    return EXIT_OK


def prune_command(*, older_than_days: float, dry_run: bool, as_json: bool, locations: Locations | None = None) -> int:
    """Removes the sessions whose last activity is older than the bound, with their checkpoints. A session in use
    is left, and so is one a kept session was forked from (the fork's turns name its checkpoints)."""
    where, directory = _sessions_dir(locations)
    cutoff = time.time() - older_than_days * 86400
    paths = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    old = [p for p in paths if _mtime(p) < cutoff]
    kept_parents = {session_index.header(p).get("forked_from") for p in paths if p not in old}
    rows: list[dict[str, Any]] = []
    failed = False
    for path in old:
        row: dict[str, Any] = {"session_id": path.stem, "last_activity": _iso(_mtime(path)), "pruned": False}
        if path.stem in kept_parents:
            row["kept"] = "a kept session was forked from it"
        elif not dry_run:
            row |= _prune_one(where, path)
            failed = failed or bool(row.get("problems"))
        rows.append(row)
    if as_json:
        print(json.dumps(rows, ensure_ascii=False))
    else:
        for row in rows:
            state = "would prune" if dry_run and "kept" not in row else "pruned" if row["pruned"] else "kept"
            why = f" ({row['kept']})" if "kept" in row else ""
            print(printable(f"{state} {row['session_id']}  {row['last_activity']}{why}"))
            for problem in row.get("problems", ()):
                print(printable(f"  {problem}"), file=sys.stderr)
        print(f"{sum(1 for r in rows if r['pruned'])} session(s) pruned", file=sys.stderr)
    return EXIT_RUNTIME if failed else EXIT_OK


def _prune_one(where: Locations, path: Path) -> dict[str, Any]:
    try:
        transcript = SessionStore.existing(path)  # a running session keeps its lock: leave it
    except UsageError:
        return {"kept": "in use by a running sprout-agent"}
    try:
        roots = checkpointing.recorded_roots(checkpointing.recorded_turns(path))
        problems = checkpointing.forget(where, path.stem, roots)
        shutil.rmtree(path.with_suffix(".agents"), ignore_errors=True)  # its subagents' transcripts
        path.unlink()
    except OSError as error:
        return {"problems": [f"{path}: {error.strerror or error}"]}
    finally:
        transcript.close()
    return {"pruned": True, "problems": problems}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()  # gone meanwhile: not old


def export_command(
    session_id: str, *, as_json: bool, out: Path | None, locations: Locations | None = None, atif: bool = False
) -> int:
    """`sessions export ID`: the session's page (or its JSON twin, or its ATIF trajectory), written to `out` or
    `ID.html` (`ID.json`, `ID.atif.json`) here."""
    from sprout_agent.batch.private import write_file

    _, directory = _sessions_dir(locations)
    path = session_index.find(directory, session_id)
    if atif:
        from sprout_agent.session import atif as atif_format
        from sprout_agent.session.recorded import read

        recorded = read(path)
        target, text = out or Path(f"{recorded.session_id}.atif.json"), atif_format.to_json(recorded)
    else:
        target, text = _page(path, as_json, out)
    write_file(target, text)  # 0600: the page holds what the session read and ran
    print(target)
    return EXIT_OK


def _page(path: Path, as_json: bool, out: Path | None) -> tuple[Path, str]:
    from sprout_agent.faces.pages.entries import from_store
    from sprout_agent.faces.pages.session_page import session_html

    session = from_store(path)
    target = out or Path(f"{session.session_id}.{'json' if as_json else 'html'}")
    return target, json.dumps(session.as_json(), ensure_ascii=False, indent=1) if as_json else session_html(session)
