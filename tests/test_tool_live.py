"""A tool working, as the faces receive it, in-process through the real pool and the built-in dev server:
bash's output as progress while it runs, and edit/write diffs in `ToolFinished`, stream-json and ACP."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.core.events import Event, ToolFinished, ToolProgress
from sprout_agent.faces.acp.updates import Updates
from sprout_agent.faces.headless.jsonl import InitInfo, JsonlSink
from tests.bounds import bounded
from tests.loop_doubles import SESSION_ID, build_loop, builtin_pool, call, reply
from tests.stream_schema import of_type, valid_lines

pytestmark = pytest.mark.anyio


@pytest.mark.e2e
async def test_bash_output_arrives_as_progress_while_the_command_still_waits(tmp_path: Path) -> None:
    # The command prints, then blocks reading a FIFO that the test writes only once that output has arrived
    # as a ToolProgress event: without live progress the call never ends (fail_after ends the test).
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # keeps a writer, so the command's open never blocks

    def release(event: Event) -> None:
        if isinstance(event, ToolProgress) and event.tail == "waiting for go":
            os.write(held, b"go\n")

    script = [
        reply(call("dev__bash", "t1", command="echo waiting for go; read -r line < go; echo got $line")),
        reply("ok"),
    ]
    events: list[Event] = []
    try:
        with anyio.fail_after(bounded(30)):
            async with builtin_pool(tmp_path, events, ("dev",)) as pool:
                loop = build_loop(script, host=pool, on_event=release)
                await loop.turn(timeout=30)
    finally:
        os.close(held)
    kinds = [type(e).__name__ for e in loop.events if isinstance(e, ToolProgress | ToolFinished)]
    assert kinds[0] == "ToolProgress" and kinds[-1] == "ToolFinished"
    assert loop.of(ToolProgress)[0] == ToolProgress("t1", "waiting for go")
    assert loop.results(-2)["t1"] == (False, "waiting for go\ngot go\n[exit code: 0]")


@pytest.mark.e2e
async def test_a_failing_command_is_a_failed_call_for_the_faces_and_the_model(tmp_path: Path) -> None:
    script = [reply(call("dev__bash", "t1", command="echo 1 failed; exit 1")), reply("it failed")]
    events: list[Event] = []
    with anyio.fail_after(bounded(30)):
        async with builtin_pool(tmp_path, events, ("dev",)) as pool:
            loop = build_loop(script, host=pool)
            await loop.turn(timeout=30)
    (finished,) = loop.of(ToolFinished)
    assert finished.is_error and finished.summary == "1 failed"
    error, text = loop.results(-2)["t1"]
    assert error and text.startswith("1 failed\n") and text.endswith("\n[exit code: 1]")  # a sandbox note between


def test_the_live_tail_is_the_last_lines_as_a_terminal_leaves_them() -> None:
    from sprout_agent.tools._shell import PROGRESS_CHARS, live_tail

    assert live_tail(b"".join(b"line %d\n" % i for i in range(10))) == "line 5\nline 6\nline 7\nline 8\nline 9"
    assert live_tail(b"building\n 10%\r 50%\r 90%") == "building\n 90%"  # a progress bar: its latest state
    assert live_tail(b"crlf\r\nend\r\n") == "crlf\nend"
    assert len(live_tail(b"x" * 5000)) == PROGRESS_CHARS
    assert live_tail(b"caf\xc3") == "caf\ufffd"  # a character cut in two by the window is replaced, not fatal


NEW = "def add(a, b):\n    return a - b\n"


async def test_edit_and_write_diffs_reach_tool_finished_stream_json_and_acp(tmp_path: Path) -> None:
    script = [
        reply(call("dev__write", "t_new", file_path="calc.py", content=NEW)),
        reply(call("dev__edit", "t_fix", file_path="calc.py", old_string="a - b", new_string="a + b")),
        reply("fixed"),
    ]
    events: list[Event] = []
    with anyio.fail_after(bounded(30)):
        async with builtin_pool(tmp_path, events, ("dev",)) as pool:
            loop = build_loop(script, host=pool)
            await loop.turn(timeout=30)
    created, edited = loop.of(ToolFinished)
    assert created.diff == "--- /dev/null\n+++ b/calc.py\n@@ -0,0 +1,2 @@\n+def add(a, b):\n+    return a - b\n"
    assert edited.diff.splitlines()[2:] == [
        "@@ -1,2 +1,2 @@",
        " def add(a, b):",
        "-    return a - b",
        "+    return a + b",
    ]
    results = loop.results(-2)  # the model reads what it read before: no second copy of the diff
    assert results["t_fix"][1].count("+    return a + b") == 1
    assert loop.results(-4)["t_new"] == (False, "Created calc.py (2 lines, 32 bytes)")

    out = io.StringIO()
    sink = JsonlSink(out, stream=True)
    sink.init(InitInfo(SESSION_ID, "m", str(tmp_path), [], [], [], resumed=False))
    for event in loop.events:
        sink(event)
    finished = {line["id"]: line for line in of_type(valid_lines(out.getvalue()), "tool_finished")}
    assert finished["t_new"]["diff"] == created.diff and finished["t_fix"]["diff"] == edited.diff

    sent: list[dict[str, Any]] = []
    updates = Updates(SESSION_ID, sent.append, str(tmp_path))
    updates.begin()
    for event in loop.events:
        updates.emit(event)
    done = [u["update"] for u in sent if u["update"].get("status") == "completed"]
    path = str(tmp_path / "calc.py")
    assert done[0]["content"] == [{"type": "diff", "path": path, "oldText": None, "newText": NEW}]
    assert done[1]["content"] == [
        {"type": "diff", "path": path, "oldText": NEW, "newText": NEW.replace("a - b", "a + b")}
    ]
