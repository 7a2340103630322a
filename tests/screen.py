"""The CLI on a pseudo-terminal read through a terminal emulator (pyte), so tests assert what a person sees:
the screen as drawn (cursor moves, erased lines and redraws applied) and the scrollback above it.

    with PtyScreen(agent_command([...]), agent_env(tmp_path, fake), tmp_path) as term:
        term.expect("›")                 # bounded wait until the text is on the screen
        term.send("hello\\r")
        term.wait_for(lambda: "✓" in term.display(), "a finished call")
        assert term.history().count("answer line") == 1
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import pyte

from tests.bounds import bounded


class PtyScreen:
    """A child on a `rows`×`columns` pty; pyte answers its cursor-position queries as a terminal would."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, rows: int = 30, columns: int = 100) -> None:
        self.columns = columns
        self.screen = pyte.HistoryScreen(columns, rows, history=5000, ratio=0.5)
        self.stream = pyte.ByteStream(self.screen)
        self.master, slave = os.openpty()
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.screen.write_process_input = lambda data: os.write(self.master, data.encode())  # type: ignore[method-assign]
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
        self.process = subprocess.Popen(
            args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
            # The pty becomes the controlling terminal, as in a real one: Ctrl-C in cooked mode is SIGINT.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.closed = False

    def __enter__(self) -> PtyScreen:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- what is on the terminal -------------------------------------------------------------------
    def _row(self, line: dict[int, pyte.screens.Char]) -> str:
        return "".join(line[x].data for x in range(self.columns)).rstrip()

    def display(self) -> str:
        """The visible screen, one line per row, trailing blanks dropped."""
        return "\n".join(line.rstrip() for line in self.screen.display)

    def cursor_line(self) -> str:
        """The row the cursor is on (where the prompt and what was typed are)."""
        return self.screen.display[self.screen.cursor.y].rstrip()

    def history(self) -> str:
        """The scrollback (lines scrolled off the top) followed by the visible screen."""
        above = [self._row(line) for line in self.screen.history.top]
        return "\n".join([*above, self.display()])

    # --- driving it ------------------------------------------------------------------------------
    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def expect(self, text: str, timeout: float = 30, *, anywhere: bool = False) -> None:
        """Until `text` is on the screen (`anywhere`: or in the scrollback)."""
        where = self.history if anywhere else self.display
        self.wait_for(lambda: text in where(), f"{text!r} on the screen", timeout)

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
        """Reads (bounded: `timeout`, scaled by tests/bounds.py) until `condition` holds."""
        limit = bounded(timeout)
        deadline = time.monotonic() + limit
        while not condition():
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{what} did not happen within {limit:.3g} s; screen:\n{self.history()[-3000:]}"
            if not self.pump(min(remaining, 0.05)):
                assert condition(), f"the terminal closed before {what}; screen:\n{self.history()[-3000:]}"

    def pump(self, timeout: float) -> bool:
        """Feeds the emulator whatever arrives within `timeout`; False once the pty is closed."""
        if self.closed or self.master < 0:
            return False
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return False
            self.stream.feed(data)
        return True

    def close(self, timeout: float = 20) -> int:
        """Waits (bounded: `timeout`, scaled) for the child to exit, reading its last output; else kills it."""
        timeout = bounded(timeout)
        if self.master < 0:
            return self.process.wait(timeout)
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline and self.pump(0.1):
            pass
        if self.process.poll() is None:
            self.process.kill()
        code = self.process.wait(timeout)
        while not self.closed and select.select([self.master], [], [], 0)[0] and self.pump(0):
            pass  # what it wrote last
        if self.master >= 0:
            os.close(self.master)
            self.master, self.closed = -1, True
        return code
