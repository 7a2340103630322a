"""A program on a real pseudo-terminal, read through a terminal emulator (pyte) as a person sees the screen.

Generic: spawn with a size, send keys, wait (bounded) for text on the screen or in the scrollback.
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

import pyte


class PtyScreen:
    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, rows: int = 30, columns: int = 100) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.process = subprocess.Popen(
            args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm-256color", "LINES": str(rows), "COLUMNS": str(columns)},
            cwd=cwd,
            start_new_session=True,
            # The pty becomes the controlling terminal, as in a real one: Ctrl-C in cooked mode is SIGINT.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.screen = pyte.HistoryScreen(columns, rows, history=2000)
        self.stream = pyte.ByteStream(self.screen)
        self.closed = False

    def lines(self) -> list[str]:
        """The scrollback then the visible screen, right-trimmed."""
        history = ["".join(char.data for char in line.values()).rstrip() for line in self.screen.history.top]
        return history + [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def display(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def cursor_line(self) -> str:
        return self.screen.display[self.screen.cursor.y].rstrip()

    def expect(self, text: str, timeout: float = 30) -> None:
        self.wait_until(lambda: text in self.text(), f"the text {text!r}", timeout)

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{what} did not happen within {timeout:g} s; screen:\n{self.text()[-3000:]}"
            if not self._read(min(remaining, 0.05)):
                assert condition(), f"the terminal closed before {what}; screen:\n{self.text()[-3000:]}"

    def _read(self, timeout: float) -> bool:
        if self.closed:
            return False
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                self.closed = True
                return False
            if b"\x1b[6n" in data:  # a cursor-position query (prompt_toolkit): answer as a terminal would
                y, x = self.screen.cursor.y + 1, self.screen.cursor.x + 1
                os.write(self.master, f"\x1b[{y};{x}R".encode())
            self.stream.feed(data)
        return True

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self, timeout: float = 20) -> int:
        """Waits (bounded) for the program to end, reading what it prints; kills it past the deadline."""
        if self.master < 0:
            return self.process.wait(timeout=5)
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline and self._read(0.1):
            pass
        if self.process.poll() is None:
            self.process.kill()
        os.close(self.master)
        self.master, self.closed = -1, True
        return self.process.wait(timeout=5)
