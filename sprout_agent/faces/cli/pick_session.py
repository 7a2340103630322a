"""`sprout-agent -r` without an id, as Claude Code's picker: in a terminal, the directory's recent sessions to choose
from; otherwise one line naming `sprout-agent sessions` (a script must say which session)."""

from __future__ import annotations

import datetime
import sys
from dataclasses import replace
from pathlib import Path

from sprout_agent.config.options import Options
from sprout_agent.core.errors import UsageError
from sprout_agent.session import index
from sprout_agent.trust.untrusted import printable

SHOWN = 10  # the newest sessions offered
NEEDS_AN_ID = "-r needs a session id here: `sprout-agent sessions` lists them (-c resumes the latest)"


def with_picked_session(options: Options, sessions: Path | None) -> Options:
    """`options` with the chosen session's id when `-r` came without one (`resume_id == ""`); unchanged otherwise."""
    if options.resume_id != "":
        return options
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise UsageError(NEEDS_AN_ID)
    found = index.list_sessions(sessions, str(options.cwd))[:SHOWN] if sessions is not None else []
    if not found:
        raise UsageError(f"no recorded session in {options.cwd} to resume (`sprout-agent sessions` lists them all)")
    for number, info in enumerate(found, 1):
        when = datetime.datetime.fromtimestamp(info.last_activity).strftime("%Y-%m-%d %H:%M")
        turns = f"{info.turns} turn{'s' if info.turns != 1 else ''}"
        print(f"{number:>2}) {when}  {turns:>9}  {printable(info.first_prompt, 60)}", file=sys.stderr)
    chosen = _ask(len(found))
    return replace(options, resume_id=found[chosen - 1].session_id)


def _ask(count: int) -> int:
    while True:
        try:
            answer = input(f"resume which session? (1-{count}, Enter for 1) ").strip() or "1"
        except EOFError:
            raise UsageError("no session chosen") from None
        if answer.isdigit() and 1 <= int(answer) <= count:
            return int(answer)
        print(f"type a number from 1 to {count}", file=sys.stderr)
