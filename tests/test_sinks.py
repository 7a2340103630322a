"""Every sink takes every event type: the terminal, stream-json (each line schema-valid) and ACP updates.

Strict pyright proves each sink's `match` is exhaustive; this proves no arm crashes on a real instance.
"""

from __future__ import annotations

import io
import typing
from typing import Any

import pytest

from sprout_agent.core import events as ev
from sprout_agent.core.messages import Image, RedactedThinking, Text, Thinking, ToolUse, Usage
from sprout_agent.faces.acp.lines import encode
from sprout_agent.faces.acp.updates import Updates
from sprout_agent.faces.headless.jsonl import InitInfo, JsonlSink, ResultInfo
from sprout_agent.faces.terminal.render import TerminalRenderer
from tests.stream_schema import kind, valid_lines

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
ONE_OF_EACH: tuple[ev.Event, ...] = (
    ev.Notice("resumed session", "info"),
    ev.Notice("watch out", "warning"),
    ev.ServerStarted("fake", 3, 1, 0.25),
    ev.ServerFailed("broken", "exited with code 3", "Traceback …\nValueError"),
    ev.ListChanged("fake", "tools", 4, ("ne\x1b[2Jw",), ("old",)),
    ev.ServerLog("fake", "warning", "feat: disk \x1b[31mfull"),
    ev.ModelWaiting(1, 1200),
    ev.ThinkingDelta("Let me \x1b[2Jthink"),
    ev.TextDelta("Hel"),
    ev.AssistantText("Hello **there**"),
    ev.ModelReplied("tool_use", Usage(10, 5, 100, 20), 0.5, 0.0012),
    ev.AssistantMessage(
        "msg_1",
        "claude-test",
        (
            Thinking("Let me \x1b[2Jthink", "sig"),
            RedactedThinking("opaque"),
            Text("Hello **there**"),
            ToolUse("call_1", "dev__edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}),
        ),
        "tool_use",
        Usage(10, 5, 100, 20),
        {"dev__edit": "mcp__dev__edit"},
    ),
    ev.StreamEvent({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
    ev.ApiRetry(1, "overloaded_error", 0.5),
    ev.ApiWaiting(15, True),
    ev.ToolStarted("call_1", "dev__edit", "dev", "edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}),
    ev.ToolRunning("call_1"),
    ev.ToolProgress("call_1", "\x1b]0;pwned\x07\x1b[2Jline 2\nline 3"),
    ev.ToolFinished(
        "call_1",
        "dev__edit",
        False,
        0.01,
        "edited a.py",
        (Text("edited a.py"),),
        "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n",
    ),
    ev.ToolStarted("call_2", "fake__image", "fake", "image", {}),
    ev.ToolFinished("call_2", "fake__image", True, 0.02, "no", (Text("no"), Image("image/png", PNG))),
    ev.HookCalled("_Stop", ("todo", "tests")),
    ev.HookObjected("_Stop", "todo", "open items: [x]"),
    ev.HookInjected("_PostCompact", "todo", "the list"),
    ev.HookTimedOut("_Stop", "tests", 1),
    ev.HookFailed("_Stop", "tests", "boom"),
    ev.HookServerKilled("tests", "hook _Stop timed out 2 times in a row"),
    ev.StopBudgetSpent(3),
    ev.HookAnswered("_SessionEnd", "notes", "saved the session summary"),
    ev.HookBudgetSpent("_PreToolUse", 5),
    ev.CompactionStarted("auto", 150_000),
    ev.CompactionFinished(150_000, 9_000, True),
    ev.CompactionStarted("manual", 9_000),
    ev.CompactionFinished(9_000, 9_000, False, "no progress"),
    ev.ServerAsked("asking", "elicitation", "Who \x1b[2Jare you?", "decline", "nobody to ask"),
    ev.SubagentStarted("call_3", "Explore", "find \x1b[2Jx", "claude-haiku-5-5"),
    ev.SubagentEvent("call_3", "Explore", ev.ToolStarted("call_4", "dev__grep", "dev", "grep", {"pattern": "x"})),
    ev.SubagentEvent("call_3", "Explore", ev.Notice("subagent \x1b]0;pwned\x07warning", "warning")),
    ev.SubagentFinished("call_3", "Explore", "end_turn", 2, Usage(10, 5), 0.001, 0.4),
    ev.TurnFinished("end_turn", "Hello there", 2, Usage(10, 5)),
)


def test_the_sample_holds_every_event_type() -> None:
    assert {type(event) for event in ONE_OF_EACH} == set(typing.get_args(ev.Event))


@pytest.mark.parametrize("interactive", [False, True])
def test_the_terminal_renders_every_event_and_prints_the_answer_on_turn_finished(
    interactive: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = io.StringIO()
    renderer = TerminalRenderer(interactive=interactive, verbose=True, stdout=io.StringIO(), answers=answers)
    for event in ONE_OF_EACH:
        renderer(event)
    renderer.close()
    assert answers.getvalue() == "Hello there\n"  # once, from TurnFinished, as plain text
    progress = capsys.readouterr().err
    shown = ("server broken failed", "retry 1", "dev__edit", "objected", "killed", "compacted", "no progress")
    changed = ("MCP server 'fake' changed its tools (4 now): +ne", "[fake warning] feat: disk")
    assert "\x1b[2J" not in progress and "\x1b[31m" not in progress  # the servers' text is untrusted
    for expected in (*shown, *changed):
        assert expected in progress
    # A server's question is one line with its name and the answer, its text escaped.
    for expected in ("MCP server 'asking' asked: Who \\x1b[2Jare you? → decline (nobody to ask)",):
        assert expected in progress


def test_stream_json_writes_a_schema_valid_line_for_every_event_it_streams() -> None:
    out = io.StringIO()
    sink = JsonlSink(out, stream=True, progress=True)
    info = InitInfo("s1", "claude-test", "/tmp", [], [], [], resumed=False)
    sink.init(info)
    for event in ONE_OF_EACH:
        sink(event)
    kinds = [kind(line) for line in valid_lines(out.getvalue())]
    assert kinds[0] == "init" and "tool_finished" in kinds and kinds[-1] == "result"
    for expected in ("hook_objected", "hook_server_killed", "stop_budget_spent", "compaction_finished", "api_retry"):
        assert expected in kinds
    assert {"tool_progress", "assistant", "user", "stream_event"} <= set(kinds)


def test_stream_json_leaves_progress_out_unless_asked() -> None:
    out = io.StringIO()
    sink = JsonlSink(out, stream=True)
    sink.init(InitInfo("s1", "claude-test", "/tmp", [], [], [], resumed=False))
    for event in ONE_OF_EACH:
        sink(event)
    kinds = [kind(line) for line in valid_lines(out.getvalue())]
    assert "tool_progress" not in kinds and "tool_finished" in kinds


def test_progress_text_with_escape_sequences_is_never_obeyed_by_a_face(capsys: pytest.CaptureFixture[str]) -> None:
    hostile = next(e for e in ONE_OF_EACH if isinstance(e, ev.ToolProgress))
    out = io.StringIO()
    sink = JsonlSink(out, stream=True, progress=True)
    sink.init(InitInfo("s1", "claude-test", "/tmp", [], [], [], resumed=False))
    sink(hostile)
    sent: list[dict[str, Any]] = []
    updates = Updates("s1", sent.append, "/tmp")
    updates.begin()
    updates.emit(next(e for e in ONE_OF_EACH if isinstance(e, ev.ToolStarted)))  # the call it belongs to
    updates.emit(hostile)
    renderer = TerminalRenderer(interactive=False, verbose=True, stdout=io.StringIO())
    renderer(hostile)
    renderer.close()
    acp_wire = b"".join(encode(message) for message in sent).decode()  # what the ACP connection writes
    for written in (out.getvalue(), acp_wire, capsys.readouterr().err):
        assert "\x1b" not in written and "\x07" not in written
    (line,) = [record for record in valid_lines(out.getvalue()) if kind(record) == "tool_progress"]
    assert line["tail"] == hostile.tail  # escaped by the encoder, not lost
    assert sent[-1]["update"]["content"][0]["content"]["text"] == hostile.tail


def test_acp_updates_render_every_event_inside_a_turn() -> None:
    sent: list[dict[str, Any]] = []
    updates = Updates("s1", sent.append, "/tmp")
    updates.usage_source = lambda: (200_000, 0.01)
    updates.begin()
    for event in ONE_OF_EACH:
        updates.emit(event)
    updates.end()
    kinds = [item["update"]["sessionUpdate"] for item in sent]
    assert {"agent_message_chunk", "tool_call", "tool_call_update", "usage_update", "agent_thought_chunk"} <= set(kinds)
    statuses = [u["update"].get("status") for u in sent if u["update"]["sessionUpdate"] == "tool_call_update"]
    assert "in_progress" in statuses and "completed" in statuses and "failed" in statuses


def test_stream_json_ends_a_tool_call_cut_short_before_the_result_line() -> None:
    out = io.StringIO()
    sink = JsonlSink(out, stream=True)
    sink.init(InitInfo("s1", "claude-test", "/tmp", [], [], [], resumed=False))
    sink(ev.ToolStarted("t_done", "fake__echo", "fake", "echo", {}))
    sink(ev.ToolStarted("t_cut", "fake__slow", "fake", "slow", {}))
    sink(ev.ToolFinished("t_done", "fake__echo", False, 0.01, "hi"))
    sink.result(ResultInfo("", "interrupted", "s1", 1, Usage(), 0.0, 5, 130, ["interrupted by SIGINT"]))
    lines = valid_lines(out.getvalue())
    assert [(kind(line), line.get("id")) for line in lines] == [
        ("init", None),
        ("tool_started", "t_done"),
        ("tool_started", "t_cut"),
        ("user", None),
        ("tool_finished", "t_done"),
        ("user", None),
        ("tool_finished", "t_cut"),
        ("result", None),
    ]
    (cut,) = lines[5]["message"]["content"]
    assert cut["tool_use_id"] == "t_cut" and cut["is_error"] is True
    assert cut["content"] == [{"type": "text", "text": "interrupted: the run ended before this tool call finished"}]
    assert lines[6]["is_error"] is True and lines[6]["server"] == "fake" and lines[6]["name"] == "mcp__fake__slow"
