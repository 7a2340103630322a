"""What the terminal keeps about a tool call while it runs, and its compact one-line arguments (no rich here:
a `-p` run prints tool lines without loading rich's spinners and tables)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

ARGUMENT_PREVIEW_CHARS = 60


def short_arguments(arguments: Mapping[str, object]) -> str:
    """`key=value` pairs cut to one short line, for the compact tool line."""
    parts: list[str] = []
    for key, value in arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={' '.join(shown.split())}")
    line = " ".join(parts)
    return line if len(line) <= ARGUMENT_PREVIEW_CHARS else line[: ARGUMENT_PREVIEW_CHARS - 1] + "…"


@dataclass
class Call:
    """A call between ToolStarted and ToolFinished."""

    name: str
    server: str
    tool: str
    arguments: dict[str, object]
    running_since: float | None = None  # ToolRunning: the wait for a person's answer is not the tool's time
    tail: str = ""  # the command's last lines so far (ToolProgress)

    def seconds(self, reported: float) -> float:
        """The call's own time: from ToolRunning to now when known, else what the loop reported."""
        return time.monotonic() - self.running_since if self.running_since is not None else reported
