"""The `pages` group of scripts/bench: how long `sessions export --html` takes on a long session, and `batch report`
on a large batch (each in this process: the page is what is measured, not an interpreter's start)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sprout_agent.core.messages import Message, Text, ToolResult, ToolUse
from sprout_agent.faces.pages.batch_report import write_report
from sprout_agent.faces.pages.entries import from_store
from sprout_agent.faces.pages.session_page import session_html
from sprout_agent.session.store import SessionStore


def export_seconds(tmp: Path, turns: int, runs: int) -> tuple[list[float], int]:
    """(seconds per export, the page's bytes) for a session of `turns` turns, each a prompt, a Markdown answer
    with a code block, a tool call and a 2 KB result."""
    store = SessionStore.new(tmp, "bench", str(tmp), "claude-sonnet-5-5")
    for n in range(turns):
        store.appended(Message("user", (Text(f"turn {n}: fix the parser"),)))
        call = ToolUse(f"t{n}", "dev__bash", {"command": f"pytest -q tests/test_{n}.py"})
        store.appended(Message("assistant", (Text(f"Running **tests** for {n}:\n\n```py\nx = {n}\n```"), call)))
        store.appended(Message("user", (ToolResult(f"t{n}", (Text("ok\n" * 700),)),)))
    store.close()
    times: list[float] = []
    size = 0
    for _ in range(runs):
        started = time.perf_counter()
        size = len(session_html(from_store(tmp / "bench.jsonl")).encode())
        times.append(time.perf_counter() - started)
    return times, size


def report_seconds(tmp: Path, tasks: int, runs: int) -> list[float]:
    out = tmp / "batch"
    (out / "transcripts").mkdir(parents=True)
    records = []
    for n in range(tasks):
        name = f"t{n}"
        lines = [{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}}]
        (out / "transcripts" / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        records.append(
            {"id": name, "status": "ok" if n % 7 else "failed", "stop_reason": "end_turn", "turns": n % 9 + 1,
             "usage": {"input_tokens": 1000 + n}, "cost_usd": (n % 13) / 1000, "duration_ms": 1000 + 37 * (n % 50),
             "diff": None, "transcript": f"transcripts/{name}.jsonl"}
        )  # fmt: skip
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    times: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        write_report(out)
        times.append(time.perf_counter() - started)
    return times
