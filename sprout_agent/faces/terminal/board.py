"""The one live region at the bottom of the terminal (rich Live): what is still changing, drawn together so the
model's spinner, running tool calls and the unfinished end of an answer never draw over each other.

Everything final is printed above it through the same console and stays in the scrollback; the region itself
is transient, so no half-drawn copy is left behind.
"""

from __future__ import annotations

import time

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from sprout_agent.faces.terminal.calls import Call
from sprout_agent.faces.terminal.tool_view import live_call
from sprout_agent.trust.untrusted import visible

REFRESHES_PER_SECOND = 12


class Board:
    """State of the live region; rich's refresh thread renders it 12 times a second while anything is live."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.calls: dict[str, Call] = {}
        self._spinners: dict[str, Spinner] = {}
        self.thinking = False
        self.text_tail = ""  # the answer's unfinished block, shown dimmed until it is complete
        self._spinner = Spinner("dots", text=Text("thinking…", style="dim"))
        self._live: Live | None = None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        now = time.monotonic()
        parts: list[RenderableType] = []
        if self.text_tail:
            room = max(3, options.max_height // 2)
            lines = self.text_tail.splitlines()[-room:]
            parts.append(Text(visible("\n".join(lines)), style="dim"))
        for call_id, call in list(self.calls.items()):
            spinner = self._spinners.setdefault(call_id, Spinner("dots", style="cyan"))
            parts.append(live_call(call, spinner, now))
        if self.thinking:
            parts.append(self._spinner)
        yield Group(*parts)

    def print(self, renderable: RenderableType) -> None:
        """Above the live region (rich moves the region down), so it stays in the scrollback."""
        self.console.print(renderable)

    def changed(self) -> None:
        """Shows the new state now (not at the next tick); starts or ends the region as needed."""
        if not (self.calls or self.thinking or self.text_tail):
            self.stop()
        elif self._live is None:
            self._live = Live(
                self,
                console=self.console,
                transient=True,
                refresh_per_second=REFRESHES_PER_SECOND,
                redirect_stdout=False,  # everything we print goes through this console already
                redirect_stderr=False,
                vertical_overflow="crop",
            )
            self._live.start(refresh=True)
        else:
            self._live.refresh()

    def touch(self) -> None:
        """Like `changed` for frequent small updates (text deltas): the next tick draws them."""
        if self._live is None:
            self.changed()

    def stop(self) -> None:
        """Erases the region (a question or the prompt comes next); the state stays for the next `changed`."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def clear(self) -> None:
        self.calls.clear()
        self._spinners.clear()
        self.thinking = False
        self.text_tail = ""
        self.stop()
