"""`sprout-agent sessions`: the recorded sessions, newest activity first, as lines or a JSON array."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from sprout_agent.config.locations import Locations
from sprout_agent.session import index as session_index


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
