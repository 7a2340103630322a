"""The interactive terminal's model output and tool calls: each answer rendered once, block by block as it
streams, and each tool call live until it ends (rich, through board.py's live region)."""

from __future__ import annotations

import time

from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.text import Text

from sprout_agent.core import events as ev
from sprout_agent.faces.terminal.board import Board
from sprout_agent.faces.terminal.calls import Call
from sprout_agent.faces.terminal.md_blocks import BlockSplitter
from sprout_agent.faces.terminal.tool_view import cancelled, finished
from sprout_agent.trust.untrusted import visible


class LiveView:
    def __init__(self, console: Console, *, verbose: bool) -> None:
        self.board = Board(console)
        self.verbose = verbose
        self._splitter = BlockSplitter()
        self._streamed = False  # this response's text came as deltas (so it is on screen already)
        self._blocks = 0  # blocks of this response printed: a blank line goes between two
        self._thought: list[str] = []  # the thinking streamed so far, shown as one line once it ends

    # --- the answer -------------------------------------------------------------------------------
    def model_waiting(self) -> None:
        self._splitter, self._streamed, self._blocks = BlockSplitter(), False, 0
        self.board.thinking = True
        self.board.changed()

    def thinking_delta(self, text: str) -> None:
        self._thought.append(text)

    def flush_thought(self) -> None:
        """The thinking ended (text, a tool call or the reply came): one dim line, or all of it with --verbose."""
        if not self._thought:
            return
        self.board.print(thought_line("".join(self._thought), full=self.verbose))
        self._thought = []

    def text_delta(self, text: str) -> None:
        self.flush_thought()
        self._streamed = True
        started = self.board.thinking
        self.board.thinking = False
        for block in self._splitter.feed(text):
            self._print_block(block)
        self.board.text_tail = self._splitter.tail()
        if started:
            self.board.changed()
        else:
            self.board.touch()  # the region's next tick shows the new tail: no redraw per delta

    def assistant_text(self, text: str) -> None:
        """The response's whole text: what was not yet printed of it is printed now, once."""
        for block in self._splitter.finish() if self._streamed else [text]:
            self._print_block(block)
        self._streamed = False
        self.board.text_tail = ""
        self.board.changed()

    def model_replied(self) -> None:
        self.flush_thought()
        self.board.thinking = False
        self.board.changed()

    def _print_block(self, block: str) -> None:
        if not block.strip():
            return
        if self._blocks:
            self.board.print("")
        self._blocks += 1
        self.board.print(Markdown(visible(block)))

    # --- tool calls -------------------------------------------------------------------------------
    def tool_started(self, event: ev.ToolStarted) -> None:
        self.flush_thought()
        self.board.calls[event.call_id] = Call(event.name, event.server, event.tool, event.arguments)
        self.board.changed()

    def tool_running(self, call_id: str) -> None:
        if (call := self.board.calls.get(call_id)) is not None:
            call.running_since = time.monotonic()
            self.board.changed()

    def tool_progress(self, event: ev.ToolProgress) -> None:
        if (call := self.board.calls.get(event.call_id)) is not None:
            call.tail = event.tail
            self.board.touch()

    def tool_finished(self, event: ev.ToolFinished) -> None:
        call = self.board.calls.pop(event.call_id, None)
        self.board.print(finished(call, event, self.verbose))
        self.board.changed()

    # --- the rest -------------------------------------------------------------------------------------
    def print(self, renderable: RenderableType) -> None:
        self.board.print(renderable)

    def pause(self) -> None:
        """The region is erased for a question; the next event draws it again."""
        self.board.stop()

    def close(self) -> None:
        """The turn is over: a call still running was cancelled (Esc, Ctrl-C) and stays on screen as such, named
        with the time it ran; an unfinished answer's lines are printed; the live region goes."""
        rest = self._splitter.finish() if self._streamed else []
        for block in rest:
            self._print_block(block)
        for call in self.board.calls.values():
            self.board.print(cancelled(call))
        self._streamed = False
        self._thought = []
        self.board.clear()


THOUGHT_LINE_CHARS = 72


def thought_line(thought: str, *, full: bool) -> Text:
    """Thinking, dimmed: collapsed to its first line and a word count, or whole (the model's text: made visible)."""
    words = len(thought.split())
    if full:
        return Text(f"∴ thinking ({words} words)\n{visible(thought.strip())}", style="dim italic")
    first = " ".join(thought.split())
    if len(first) > THOUGHT_LINE_CHARS:
        first = first[: THOUGHT_LINE_CHARS - 1] + "…"
    return Text(f"∴ {visible(first)} ({words} words; --verbose shows thinking)", style="dim italic")
