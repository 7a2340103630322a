"""The session transcript file (store.py) read back and written: resets, cut last lines, repair."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sprout_agent import store
from sprout_agent.messages import Message, Text, ToolResult, ToolUse, user_text


def record(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, **fields})


def message_record(message: Message) -> str:
    return record("message", time=0, message=store.encode_message(message))


def test_load_starts_at_the_last_reset_and_ignores_a_cut_last_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    summary = [user_text("summary of the past")]
    lines = [
        record("session", version=1, session_id="abc", cwd="/w", model="m", created=0),
        message_record(user_text("old prompt")),
        message_record(Message("assistant", (Text("old answer"),))),
        record("reset", time=0, reason="compaction", history=[store.encode_message(m) for m in summary]),
        message_record(Message("assistant", (Text("after"),))),
    ]
    path.write_text("\n".join(lines) + '\n{"type": "message", "time": 0, "mess')
    loaded = store.load(path)
    assert loaded.session_id == "abc" and loaded.cwd == "/w" and not loaded.repaired
    assert loaded.history == [user_text("summary of the past"), Message("assistant", (Text("after"),))]


def test_repair_answers_unfinished_tool_calls_and_keeps_a_trailing_prompt() -> None:
    history = [
        user_text("go"),
        Message("assistant", (ToolUse("t1", "fake__slow", {"seconds": 30}), ToolUse("t2", "fake__echo", {}))),
        user_text("go on"),
    ]
    fixed = store.repair(history)
    assert fixed[:2] == history[:2]
    assert fixed[2] == Message(
        "user",
        (
            ToolResult("t1", (Text(store.INTERRUPTED),), True),
            ToolResult("t2", (Text(store.INTERRUPTED),), True),
            Text("go on"),
        ),
    )
    assert store.repair(fixed) == fixed
    assert store.repair(history[:2])[-1].content[0] == ToolResult("t1", (Text(store.INTERRUPTED),), True)


def test_appending_after_a_cut_line_drops_the_fragment(tmp_path: Path) -> None:
    recorder = store.SessionStore.new(tmp_path, "s1", "/w", "m")
    recorder.appended(user_text("hello"))
    recorder.close()
    with (tmp_path / "s1.jsonl").open("a") as handle:
        handle.write('{"type": "mess')
    resumed = store.SessionStore.resuming(store.load(tmp_path / "s1.jsonl"))
    resumed.reset([user_text("hello")], "resume")  # unchanged by repair: not written again
    resumed.appended(Message("assistant", (Text("hi"),)))
    resumed.close()
    lines = (tmp_path / "s1.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["session", "message", "message"]
    assert store.load(tmp_path / "s1.jsonl").history == [user_text("hello"), Message("assistant", (Text("hi"),))]
