"""Text from a repository, a model or an MCP server made safe to show on a terminal.

A terminal obeys escape sequences: a hostile config, tool output or server stderr could clear the screen,
fake an "ok", retitle the window or hide part of a command. Everything such a source says passes through
here before it reaches the terminal (JSON output is escaped by its encoder and needs nothing).
"""

from __future__ import annotations

import re

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all C0/C1 controls but \t and \n
_LONG_BLANKS = re.compile(r"\s{12,}")  # a run of blanks long enough to push text out of sight


def _escaped(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii")


def visible(text: str) -> str:
    """Multi-line text with every control character but tab and newline shown escaped (`\\x1b`)."""
    return _CONTROLS.sub(lambda match: _escaped(match.group()), text)


def printable(text: str, limit: int | None = None) -> str:
    """One line: every non-printable character escaped, long runs of blanks shown as their count, and at
    most `limit` characters, with what was cut said (a person deciding on a command must see all of it)."""
    text = _LONG_BLANKS.sub(lambda m: f" ⟨{len(m.group())} blanks⟩ ", text)
    shown = "".join(ch if ch.isprintable() else _escaped(ch) for ch in text)
    if limit is not None and len(shown) > limit:
        return f"{shown[:limit]} ⟨… {len(shown) - limit} more characters not shown⟩"
    return shown
