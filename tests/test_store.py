"""The session transcript file (store.py) read back and written: resets, cut last lines, repair, results
recorded one by one, old transcripts, permissions, the lock, and writes that fail."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.core.errors import StoreError, UsageError
from sprout_agent.core.events import ToolFinished
from sprout_agent.core.messages import Message, Text, ToolResult, ToolUse, user_text
from sprout_agent.core.protocols import ModelRequest
from sprout_agent.session import store
from tests.api_rules import assert_valid_request
from tests.bounds import bounded
from tests.loop_doubles import Loop, MemoryHost, api_body, build_loop, call, echo, hangs, reply, server


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


# ---------------------------------------------------------------- results recorded one by one (SIGKILL)


def store_loop(tmp_path: Path, script: list[Any], host: MemoryHost, **options: Any) -> tuple[Loop, Path]:
    """build_loop with the real session store as its recorder."""
    loop = build_loop(script, host=host, **options)
    recorder = store.SessionStore.new(tmp_path, "s1", "/w", "m")
    loop.agent.recorder = recorder
    return loop, tmp_path / "s1.jsonl"


@pytest.mark.anyio
async def test_a_kill_while_one_call_runs_keeps_the_results_of_the_calls_that_finished(tmp_path: Path) -> None:
    host = MemoryHost({"fake": server(echo=echo(), slow=hangs())})
    uses = [call("fake__echo", "t1", text="one"), call("fake__slow", "t2"), call("fake__echo", "t3", text="three")]
    finished: list[str] = []
    on_event = lambda event: finished.append(event.call_id) if isinstance(event, ToolFinished) else None  # noqa: E731
    loop, path = store_loop(tmp_path, [reply(*uses)], host, on_event=on_event)
    async with anyio.create_task_group() as group:
        group.start_soon(loop.turn)
        with anyio.fail_after(bounded(10)):
            while len(finished) < 2:  # both echoes are done, the slow call still runs
                await anyio.sleep(0)
        # The file as a SIGKILL now would leave it: the finished results are in, in call order.
        history = store.load(path).history
        group.cancel_scope.cancel()
    assert history[-1] == Message(
        "user",
        (
            ToolResult("t1", (Text("one"),)),
            ToolResult("t2", (Text(store.INTERRUPTED),), True),
            ToolResult("t3", (Text("three"),)),
        ),
    )
    assert_valid_request(api_body(ModelRequest("s", history, tuple(host.tools()))))
    # After the cancel the batch's rest (the cut call) was recorded too, once: one message, in call order.
    (results,) = [m for m in store.load(path).history if m.role == "user" and isinstance(m.content[0], ToolResult)]
    assert [b.tool_use_id for b in results.content if isinstance(b, ToolResult)] == ["t1", "t2", "t3"]
    assert sum(1 for line in path.read_text().splitlines() if '"t1"' in line) == 2  # the call and its result


def test_results_recorded_out_of_order_load_back_as_one_message_in_call_order(tmp_path: Path) -> None:
    recorder = store.SessionStore.new(tmp_path, "s1", "/w", "m")
    uses = (ToolUse("a", "x__t", {}), ToolUse("b", "x__t", {}), ToolUse("c", "x__t", {}))
    recorder.appended(user_text("go"))
    recorder.appended(Message("assistant", uses))
    recorder.result(ToolResult("c", (Text("C"),)))
    recorder.result(ToolResult("a", (Text("A"),)))
    cut = ToolResult("b", (Text("interrupted: the call was cancelled"),), True)
    recorder.appended(Message("user", (ToolResult("a", (Text("A"),)), cut, ToolResult("c", (Text("C"),)))))
    recorder.appended(Message("assistant", (Text("ok"),)))
    recorder.close()
    loaded = store.load(tmp_path / "s1.jsonl")
    assert not loaded.repaired
    assert loaded.history[2] == Message("user", (ToolResult("a", (Text("A"),)), cut, ToolResult("c", (Text("C"),))))
    assert loaded.history[3] == Message("assistant", (Text("ok"),))


# ---------------------------------------------------------------- what an old transcript may hold


def test_an_old_transcript_with_an_image_the_api_refuses_loads_it_as_a_note(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    svg = {"type": "image", "media_type": "image/svg+xml", "data": "PHN2Zy8+"}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [svg], "is_error": False}
    use = {"type": "tool_use", "id": "t1", "name": "x__shot", "input": {}}
    lines = [
        record("message", time=0, message={"role": "user", "content": [{"type": "text", "text": "go"}]}),
        record("message", time=0, message={"role": "assistant", "content": [use]}),
        record("message", time=0, message={"role": "user", "content": [result]}),
    ]
    path.write_text("\n".join(lines) + "\n")
    note = Text("[image omitted: image/svg+xml is not a type the API accepts]")
    assert store.load(path).history[-1] == Message("user", (ToolResult("t1", (note,)),))


def test_a_lone_surrogate_in_a_message_is_written_and_read_back(tmp_path: Path) -> None:
    recorder = store.SessionStore.new(tmp_path, "s1", "/w", "m")
    recorder.appended(user_text("bad \ud800 text"))
    recorder.close()
    assert store.load(tmp_path / "s1.jsonl").history == [user_text("bad \ud800 text")]


# ---------------------------------------------------------------- permissions, the lock, failures


def test_session_files_are_0600_in_a_0700_directory_and_an_older_0755_one_is_tightened(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh" / "sessions"
    recorder = store.SessionStore.new(fresh, "s1", "/w", "m")
    recorder.appended(user_text("secret prompt"))
    recorder.close()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    assert stat.S_IMODE((fresh / "s1.jsonl").stat().st_mode) == 0o600
    old = tmp_path / "old"
    old.mkdir(mode=0o755)
    (old / "s2.jsonl").write_text(record("session", session_id="s2", cwd="/w") + "\n")
    (old / "s2.jsonl").chmod(0o644)
    resumed = store.SessionStore.resuming(store.load(old / "s2.jsonl"))
    resumed.close()
    assert stat.S_IMODE(old.stat().st_mode) == 0o700
    assert stat.S_IMODE((old / "s2.jsonl").stat().st_mode) == 0o600


def test_a_second_run_on_a_session_in_use_is_refused_with_exit_2(tmp_path: Path) -> None:
    first = store.SessionStore.new(tmp_path, "s1", "/w", "m")
    first.appended(user_text("hello"))
    loaded = store.load(tmp_path / "s1.jsonl")
    with pytest.raises(UsageError, match="in use by another sprout-agent run") as refused:
        store.SessionStore.resuming(loaded)
    assert refused.value.exit_code == 2
    first.close()  # the lock goes with the first run
    store.SessionStore.resuming(loaded).close()


def test_an_unwritable_sessions_directory_is_one_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    expected = f"cannot write the session transcript {blocker}/sessions/s1.jsonl: Not a directory"
    with pytest.raises(StoreError, match=re.escape(expected)):
        store.SessionStore.new(blocker / "sessions", "s1", "/w", "m")  # even root cannot mkdir here


@pytest.mark.anyio
async def test_a_full_disk_ends_the_turn_with_one_store_error_not_a_crash(tmp_path: Path) -> None:
    loop = build_loop([reply(call("fake__echo", "t1", text="x"), call("fake__echo", "t2", text="y")), reply("ok")])
    header: dict[str, object] = {"type": "session", "version": 1, "session_id": "s1"}
    loop.agent.recorder = store.SessionStore(Path("/dev/full"), header)  # every write: ENOSPC
    with pytest.raises(StoreError, match="No space left on device"):
        await loop.turn()
    assert loop.model.requests == []  # nothing was sent that the transcript could not keep
