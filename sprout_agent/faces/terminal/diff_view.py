"""A unified diff as numbered, classified lines clipped to a height: the screen logic of an edit, without rich."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MAX_DIFF_LINES = 24  # an edit's diff taller than this is cut, saying how much was left out

Kind = Literal["add", "del", "ctx", "gap"]
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line to show: `number` is the new file's line (the old file's for a removed line); gap: a skip."""

    kind: Kind
    number: int | None
    text: str


@dataclass(frozen=True, slots=True)
class DiffView:
    lines: tuple[DiffLine, ...]
    hidden: int  # lines cut by the height limit
    added: int
    removed: int


def diff_lines(diff: str) -> list[DiffLine]:
    """The lines of a unified diff with their line numbers; file headers dropped, hunk starts shown as gaps."""
    lines: list[DiffLine] = []
    old = new = 0
    header = True  # before a file's first hunk: `---`/`+++`, and git's `new file mode`, `index`… (a rewind's)
    for raw in diff.splitlines():
        if raw.startswith("diff "):
            header = True
        if (hunk := _HUNK.match(raw)) is not None:
            header = False
            old, new = int(hunk.group(1)), int(hunk.group(2))
            if lines:
                lines.append(DiffLine("gap", None, "⋮"))
            continue
        if header or raw.startswith("\\"):
            continue  # file headers and "\ No newline at end of file" say nothing a person needs here
        if raw.startswith("+"):
            lines.append(DiffLine("add", new, raw[1:]))
            new += 1
        elif raw.startswith("-"):
            lines.append(DiffLine("del", old, raw[1:]))
            old += 1
        else:
            lines.append(DiffLine("ctx", new, raw[1:]))
            old, new = old + 1, new + 1
    return lines


def view(diff: str, height: int = MAX_DIFF_LINES) -> DiffView:
    """The diff's lines, at most `height` of them (the rest counted in `hidden`)."""
    lines = diff_lines(diff)
    added = sum(line.kind == "add" for line in lines)
    removed = sum(line.kind == "del" for line in lines)
    shown = lines[:height] if len(lines) > height else lines
    return DiffView(tuple(shown), len(lines) - len(shown), added, removed)


def number_width(lines: tuple[DiffLine, ...]) -> int:
    return max((len(str(line.number)) for line in lines if line.number is not None), default=1)
