"""Streamed Markdown cut into blocks that are complete, so each is rendered once as it finishes (no rich here).

A block ends at a blank line (unless the next line is indented: a list item's second paragraph), after a
heading, before and after a fenced code block. Long code blocks and lists are cut into chunks of
`CHUNK_LINES`: rendering Markdown costs about a millisecond a line, and the last chunk is all a person waits
for when the stream ends.
"""

from __future__ import annotations

import re

CHUNK_LINES = 40
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_ITEM = re.compile(r"^([-*+]|\d{1,9}[.)])\s")


class BlockSplitter:
    """Feed it text deltas; it returns each block once the text after it shows that the block is complete."""

    def __init__(self) -> None:
        self._partial = ""  # the unfinished last line
        self._lines: list[str] = []  # the current block's complete lines
        self._fence: str | None = None  # the open fence's marker (``` or ~~~, at least 3)
        self._opening = ""  # the open fence's first line, repeated when a long code block is cut
        self._blank = False  # a blank line came after the current block; is it its end?

    def feed(self, text: str) -> list[str]:
        """The blocks this text completed, in order."""
        done: list[str] = []
        *complete, self._partial = (self._partial + text).split("\n")
        for line in complete:
            self._line(line, done)
        return done

    def tail(self) -> str:
        """The text of the unfinished block, for a live preview."""
        return "\n".join([*self._lines, self._partial]) if self._lines else self._partial

    def finish(self) -> list[str]:
        """The rest, once the stream has ended."""
        done: list[str] = []
        if self._partial:
            self._line(self._partial, done)
            self._partial = ""
        self._emit(done)
        self._fence, self._blank = None, False
        return done

    def _line(self, line: str, done: list[str]) -> None:
        if self._fence is not None:
            self._in_fence(line, done)
        elif not line.strip():
            self._blank = bool(self._lines)
        elif (fence := _FENCE.match(line)) is not None:
            self._emit(done)
            self._fence, self._opening, self._lines = fence.group(1), line, [line]
        elif _HEADING.match(line):
            self._emit(done)
            done.append(line)
        else:
            self._text_line(line, done)

    def _in_fence(self, line: str, done: list[str]) -> None:
        assert self._fence is not None
        stripped = line.strip()
        if stripped.startswith(self._fence) and not stripped.strip(self._fence[0]):
            self._lines.append(line)
            self._fence = None
            self._emit(done)
            return
        if len(self._lines) >= CHUNK_LINES:  # cut a long code block: close it here, reopen it for the rest
            done.append("\n".join([*self._lines, self._fence]))
            self._lines = [self._opening]
        self._lines.append(line)

    def _text_line(self, line: str, done: list[str]) -> None:
        if self._blank:
            self._blank = False
            if line[0] in " \t":  # an indented line continues the block (a list item's next paragraph)
                self._lines.append("")
            else:
                self._emit(done)
        elif len(self._lines) >= CHUNK_LINES and _ITEM.match(line) and _ITEM.match(self._lines[0]):
            self._emit(done)  # a long list: cut between two of its top-level items
        self._lines.append(line)

    def _emit(self, done: list[str]) -> None:
        if self._lines:
            done.append("\n".join(self._lines))
        self._lines, self._blank = [], False
