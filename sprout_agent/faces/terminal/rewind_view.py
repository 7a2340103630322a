"""/rewind's questions in the terminal (docs/interactive.md): the session's turns to pick from, what to rewind
(files, conversation or both), the preview (each file's diff drawn as an edit's, and the conflicts: files the
user changed since, left alone unless included), and the confirmation. Asked with ask.py's questions."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from sprout_agent.checkpoints.timeline import Turn
from sprout_agent.checkpoints.turn_diff import sections
from sprout_agent.faces.terminal import tool_view
from sprout_agent.faces.terminal.ask import Choice, choose, read_line
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.session.rewinding import RewindOutcome
from sprout_agent.trust.untrusted import printable

TURNS_LISTED = 20  # the latest ones; an earlier turn is picked by typing its number
PROMPT_SHOWN = 50
Scope = tuple[bool, bool]  # (files, conversation)
_SCOPES: dict[str, Scope] = {"both": (True, True), "conversation": (False, True), "files": (True, False)}


def turn_rows(turns: Sequence[Turn], now: float | None = None) -> list[tuple[str, str, str, str, str]]:
    """(turn, when, prompt, files, +/−) per turn; a rewind step reads `↶ rewind to turn N` (picking it is redo)."""
    today = time.strftime("%Y-%m-%d", time.localtime(now))
    rows: list[tuple[str, str, str, str, str]] = []
    for turn in turns:
        day = time.strftime("%Y-%m-%d", time.localtime(turn.time))
        when = time.strftime("%H:%M" if day == today else "%Y-%m-%d %H:%M", time.localtime(turn.time))
        first = turn.prompt.strip().split("\n", 1)[0]
        prompt = ("↶ " if turn.kind == "rewind" else "") + printable(first, PROMPT_SHOWN)
        checkpointed = bool(turn.before)
        files = str(len(turn.files)) if checkpointed else "-"
        lines = f"+{turn.added} −{turn.removed}" if turn.files else ""
        rows.append((str(turn.number), when, prompt, files, lines))
    return rows


async def pick_turn(renderer: TerminalRenderer, turns: Sequence[Turn]) -> Turn | None:
    """The turn to go back to before, typed by number (Enter: the latest); None when the person gave up."""
    shown = turns[-TURNS_LISTED:]
    renderer.pause()
    if len(turns) > len(shown):
        renderer.say(f"… {len(turns) - len(shown)} earlier turns (type one's number)", "dim")
    renderer.table("Rewind to before which turn?", ("turn", "when", "prompt", "files", "+/−"), turn_rows(shown))
    by_number = {str(turn.number): turn for turn in turns}
    while True:
        typed = await read_line("turn (Enter: the latest; Ctrl-C: cancel) › ", str(turns[-1].number))
        if typed is None:
            return None
        if (turn := by_number.get(typed.strip())) is not None:
            return turn
        renderer.say(f"no turn {printable(typed.strip(), 20)}: type one of the numbers listed", "yellow")


async def pick_scope(renderer: TerminalRenderer, conversation: bool) -> Scope | None:
    """Files and conversation, conversation only, or files only (files only without a transcript to fork)."""
    choices = [Choice("b", "files and conversation", "both"), Choice("c", "conversation only", "conversation")]
    choices = [*(choices if conversation else []), Choice("f", "files only", "files")]
    picked = _said(renderer, choices, await choose(choices, escape="cancel", escape_label="cancel"))
    return _SCOPES.get(picked or "")


def preview(outcome: RewindOutcome, scope: Scope, old_session: str) -> RenderableType:
    """What the rewind will do, before it does it: each file's diff, the conflicts, where the conversation goes."""
    files, conversation = scope
    parts: list[RenderableType] = [Text(f"\nRewinding to before turn {outcome.turn.number}:", style="bold")]
    if files:
        parts += _files_preview(outcome)
    if conversation:
        parts.append(Text(f"the conversation goes back to before turn {outcome.turn.number}, in a new session"))
        parts.append(Text(f"this one stays resumable: sprout-agent -r {old_session}", style="dim"))
    return Group(*parts)


def _files_preview(outcome: RewindOutcome) -> list[RenderableType]:
    count = len(outcome.restored)
    parts: list[RenderableType] = [
        Text(f"{count} file{'' if count == 1 else 's'} to put back" if count else "no files to put back")
    ]
    for path, section in sections(outcome.preview):
        parts.append(Text(f"  {printable(path)}", style="bold"))
        binary = "GIT binary patch" in section or "Binary files" in section
        parts.append(Padding(Text("binary file", style="dim") if binary else tool_view.diff(section), (0, 0, 0, 4)))
    if outcome.conflicts:
        parts.append(Text("you changed these since (left as they are unless you include them):", style="yellow"))
        parts += [Text(f"  {printable(c.path)}: {c.reason}", style="yellow") for c in outcome.conflicts]
    return parts


async def confirm(renderer: TerminalRenderer, outcome: RewindOutcome) -> Literal["yes", "include"] | None:
    """Go ahead, go ahead overwriting the conflicting files too (only when asked for by name), or not."""
    choices = [Choice("y", "rewind" + (", leaving the files above as they are" if outcome.conflicts else ""), "yes")]
    if outcome.conflicts:
        count = len(outcome.conflicts)
        choices.append(
            Choice("i", f"rewind, and put back the {count} file{'s' if count > 1 else ''} you changed too", "include")
        )
    choices.append(Choice("n", "no", "no"))
    picked = _said(renderer, choices, await choose(choices, escape="no"))
    return picked if picked == "yes" or picked == "include" else None


def _said(renderer: TerminalRenderer, choices: Sequence[Choice], picked: str | None) -> str | None:
    """The answer under the question, as every question leaves it (ask.py)."""
    if (label := next((c.label for c in choices if c.answer == picked), None)) is not None:
        renderer.say(f"  → {label}", "dim")
    return picked
