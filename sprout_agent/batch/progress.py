"""The progress display on stderr: done / failed / running, cost so far and the time left. On a terminal one line
redrawn in place; otherwise one line per finished task (a CI log)."""

from __future__ import annotations

import time
from typing import Any, TextIO

from sprout_agent.trust.untrusted import printable


class Progress:
    def __init__(self, total: int, jobs: int, stream: TextIO, *, live: bool) -> None:
        self.total, self.jobs, self.stream, self.live = total, jobs, stream, live
        self.done = self.failed = self.running = 0
        self.cost = 0.0
        self._durations: list[float] = []
        self._started = time.monotonic()

    def started(self) -> None:
        self.running += 1
        self._draw()

    def finished(self, record: dict[str, Any]) -> None:
        self.running -= 1
        self.done += 1
        self.failed += record.get("status") != "ok"
        self.cost += float(record.get("cost_usd") or 0)
        self._durations.append((record.get("duration_ms") or 0) / 1000)
        if not self.live:
            seconds = (record.get("duration_ms") or 0) / 1000
            head = f"{printable(str(record['id']))} {record.get('status')} {seconds:.1f}s"
            self.stream.write(f"{head} | {self.line()}\n")
            self.stream.flush()
        self._draw()

    def tick(self) -> None:
        self._draw()

    def close(self) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def line(self) -> str:
        return (
            f"{self.done}/{self.total} done, {self.failed} failed, {self.running} running, "
            f"${self.cost:.4f}, {self._left()}"
        )

    def _left(self) -> str:
        remaining = self.total - self.done
        if not remaining:
            return "nothing left"
        if not self._durations:
            return "time left: ?"
        mean = sum(self._durations) / len(self._durations)
        seconds = round(remaining * mean / max(1, min(self.jobs, remaining)))
        return f"~{seconds // 60}m{seconds % 60:02d}s left" if seconds >= 60 else f"~{seconds}s left"

    def _draw(self) -> None:
        if self.live:
            self.stream.write(f"\r\x1b[Kbatch: {self.line()}")
            self.stream.flush()
