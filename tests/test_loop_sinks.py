"""The loop's events as a script and as a person read them, in-process: every event of real loop runs through
the stream-json sink (each line checked against docs/stream-json.schema.json) and the terminal renderer.
"""

from __future__ import annotations

import io
import typing

import anyio
import pytest

from sprout_agent.core import events as ev
from sprout_agent.core.events import Event
from sprout_agent.core.messages import Text, ToolUse, Usage
from sprout_agent.core.protocols import HookCallFailed, ToolOutcome
from sprout_agent.faces.headless.jsonl import InitInfo, JsonlSink, ResultInfo, ServerInfo
from tests.bounds import bounded
from tests.loop_doubles import (
    CWD,
    MODEL,
    SESSION_ID,
    MemoryHost,
    ModelStep,
    answers,
    build_loop,
    call,
    default_server,
    echo,
    hangs,
    reply,
    reports,
    server,
)
from tests.stream_schema import of_type, result_text, stream, texts, tool_results, types, valid_lines

pytestmark = pytest.mark.anyio

# Spinner, terminal and ACP only: `assistant` carries the reply whole, so these have no stream-json line.
NOT_STREAMED = {ev.ModelWaiting, ev.TextDelta, ev.ToolRunning, ev.ThinkingDelta, ev.AssistantText, ev.ModelReplied}
DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


async def events_of_a_busy_session() -> list[Event]:
    """Tools (ok, error, unknown), an objection, a failed hook, timeouts and a kill, the spent budget, a
    compaction that injects, and the events only a face or the model client emits (servers, retries, turn end)."""
    live = reports("step 1", "step 2", result=ToolOutcome((Text("Edited a.py"),), diff=DIFF))
    host = MemoryHost(
        {
            "fake": {
                **default_server(),
                **server(
                    live=live,
                    _Stop=answers("tests are red"),
                    _PostCompact=answers(then="todo"),
                    _SessionEnd=answers("bye"),
                ),
            },
            "slow": server(_Stop=hangs(), _PostCompact=hangs(), echo=echo()),  # second timeout: killed
            "broken": server(_Stop=answers(HookCallFailed("connection closed"))),
        }
    )
    script = [
        billed("Echoing.", call("fake__echo", "toolu_1", text="one")),
        billed(call("fake__live", "toolu_5")),
        billed(call("fake__add", "toolu_2", a=2, b=3), call("fake__fail", "toolu_3"), call("x__gone", "t4")),
        billed("All done."),  # objected to
        billed("Really done."),  # honoured: right after an objection
        billed("Two done."),  # the budget of one is spent: reported, not asked
        billed("the summary"),
        billed("after compaction"),
    ]
    loop = build_loop(script, host=host, hook_servers="*", hook_timeout_ms=int(bounded(50)), stop_max_rejections=1)
    await loop.agent.start_session("startup")
    await loop.turn("one")
    await loop.turn("two")
    with anyio.fail_after(bounded(10)):
        await loop.agent.compact("manual")
    await loop.turn("three")
    await loop.agent.end_session("exit")
    extra: list[Event] = [
        ev.HookBudgetSpent("_PreToolUse", 2),  # tests/test_tool_hooks.py emits it from a loop
        ev.ServerStarted("fake", 4, 2, 0.2),
        ev.ServerFailed("bad", "exited with code 3", "fake: fatal\n"),
        ev.ListChanged("fake", "tools", 5, ("extra",), ("old",)),
        ev.ServerLog("fake", "warning", "feat: disk full"),
        ev.ApiRetry(1, "529: overloaded", 0.5),
        ev.ApiWaiting(15, True),  # the model client, when a request stays quiet
        ev.ThinkingDelta("the model client streams reasoning"),
        ev.Notice("MCP_HOOK_SERVERS names 'ghost', but no server has that name", "warning"),
        ev.ServerAsked("asking", "elicitation", "Who are you?", "decline", "nobody to ask"),
        ev.StreamEvent({"type": "message_stop"}),  # the model client, with --include-partial-messages
        *subagent_events(),
        ev.TurnFinished("end_turn", "after compaction", 1, Usage(10, 2)),
    ]
    return [*loop.events, *extra]


def subagent_events() -> list[Event]:
    """A subagent's run as the delegator reports it (tests/test_subagents.py runs real ones): nested under its call."""
    grep = ToolUse("toolu_c1", "dev__grep", {"pattern": "x"})
    inner: list[Event] = [
        ev.AssistantMessage("msg_c", MODEL, (Text("searching"), grep), "tool_use", Usage(50, 5), {"dev__grep": "Grep"}),
        ev.ToolStarted("toolu_c1", "dev__grep", "dev", "grep", {"pattern": "x"}),
        ev.ToolFinished("toolu_c1", "dev__grep", False, 0.01, "a.py", (Text("a.py"),)),
        ev.Notice("subagent Explore: Bash(git:*): a rule with a specifier is not applied", "warning"),
    ]
    return [
        ev.SubagentStarted("toolu_task", "Explore", "find x", MODEL),
        *(ev.SubagentEvent("toolu_task", "Explore", event) for event in inner),
        ev.SubagentFinished("toolu_task", "Explore", "end_turn", 2, Usage(50, 5), 0.001, 0.5),
    ]


def billed(*parts: object) -> ModelStep:
    return reply(*parts, usage=Usage(100, 20, 5, 1))  # type: ignore[arg-type]


async def test_every_event_a_session_emits_is_a_schema_valid_stream_json_line() -> None:
    events = await events_of_a_busy_session()
    emitted = {type(e) for e in events}
    assert emitted == set(typing.get_args(Event)), "the busy session should emit every event type"
    out = io.StringIO()
    sink = JsonlSink(out, stream=True, progress=True)
    sink(events[-1])  # before init: held back, then written after it
    sink.init(
        InitInfo(
            SESSION_ID,
            MODEL,
            CWD,
            [ServerInfo("fake", "running", 4, 2, "")],
            ["mcp__fake__echo"],
            [("fake", "_Stop"), ("fake", "_PostCompact")],
            resumed=False,
        )
    )
    for event in events[:-1]:
        sink(event)
    sink.result(ResultInfo("after compaction", "end_turn", SESSION_ID, 7, Usage(700, 140), 0.01, 1234, 0, []))
    lines = stream(out.getvalue())  # every line valid, init first, result last, one session id
    written = set(types(lines))
    assert {"init", "result", "assistant", "user", "tool_finished", "stream_event"} <= written
    # One line kind per streamed event type (TurnFinished is a `result`), + init, + the `user` of a tool's result.
    # A subagent's events are lines of the kinds above, with `parent_tool_use_id`: no kind of their own.
    assert len(written) == len(emitted - NOT_STREAMED - {ev.SubagentEvent}) + 2
    assert types(lines)[1] == "result"  # the turn that ended before init (a held-back event) follows it
    turns = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert types(lines)[-1] == "result" and len(of_type(lines, "result")) == len(turns) + 1  # + the run's
    assert [(s["id"], s["name"], s["server"], s["tool"]) for s in of_type(lines, "tool_started")] == [
        ("toolu_1", "mcp__fake__echo", "fake", "echo"),
        ("toolu_5", "mcp__fake__live", "fake", "live"),
        ("toolu_2", "mcp__fake__add", "fake", "add"),
        ("toolu_3", "mcp__fake__fail", "fake", "fail"),
        ("t4", "x__gone", "", ""),
    ]
    # The assistant lines carry the calls as the SDKs name them, with the model's ids and inputs.
    main = [line for line in of_type(lines, "assistant") if line["parent_tool_use_id"] is None]
    uses = [b for line in main for b in line["message"]["content"] if b["type"] == "tool_use"]
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [
        ("toolu_1", "mcp__fake__echo", {"text": "one"}),
        ("toolu_5", "mcp__fake__live", {}),
        ("toolu_2", "mcp__fake__add", {"a": 2, "b": 3}),
        ("toolu_3", "mcp__fake__fail", {}),
        ("t4", "x__gone", {}),
    ]
    assert texts(lines)[:2] == ["Echoing.", "All done."]
    assert of_type(lines, "tool_started")[2]["arguments"] == {"a": 2, "b": 3}
    assert [(p["id"], p["tail"]) for p in of_type(lines, "tool_progress")] == [
        ("toolu_5", "step 1"),
        ("toolu_5", "step 2"),
    ]
    finished = {f["id"]: f for f in of_type(lines, "tool_finished")}
    assert finished["toolu_5"]["diff"] == DIFF and "diff" not in finished["toolu_1"]
    results = tool_results(lines)
    assert result_text(results["toolu_1"]) == "one" and results["toolu_1"]["is_error"] is False
    assert result_text(results["toolu_2"]) == "5" and finished["toolu_2"]["server"] == "fake"
    assert finished["toolu_1"]["is_error"] is False
    assert finished["toolu_3"]["is_error"] is True and finished["t4"]["is_error"] is True
    assert results["toolu_3"]["is_error"] is True and results["t4"]["is_error"] is True
    called = of_type(lines, "hook_called")[0]
    assert called.pop("uuid")
    assert called == {
        "type": "system",
        "subtype": "hook_called",
        "session_id": SESSION_ID,
        "hook": "_Stop",
        "servers": ["fake", "slow", "broken"],
    }
    (objected,) = of_type(lines, "hook_objected")
    assert objected["server"] == "fake" and objected["text"] == "tests are red"
    assert of_type(lines, "hook_injected")[0]["text"] == "todo"


def test_json_output_holds_back_every_event_and_writes_only_the_result() -> None:
    out = io.StringIO()
    sink = JsonlSink(out, stream=False)
    sink(ev.AssistantText("hi"))
    sink.init(InitInfo(SESSION_ID, MODEL, CWD, [], [], [], resumed=False))
    sink(ev.AssistantText("hi"))
    sink.result(ResultInfo("hi", "end_turn", SESSION_ID, 1, Usage(1, 1), 0.0, 5, 0, []))
    sink.result(ResultInfo("again", "end_turn", SESSION_ID, 1, Usage(1, 1), 0.0, 5, 0, []))  # written once
    (result,) = stream(out.getvalue())
    assert result["result"] == "hi" and result["session_id"] == SESSION_ID


@pytest.mark.parametrize(
    ("event", "verbose", "line"),
    [
        (ev.HookObjected("_Stop", "fake", "tests fail\nmore"), False, "hook _Stop from fake objected: tests fail more"),
        (ev.HookTimedOut("_Stop", "slow", 1), False, "hook _Stop on slow timed out (1 in a row)"),
        (ev.HookServerKilled("slow", "hook _Stop timed out 2 times in a row"), False, "server slow killed"),
        (ev.StopBudgetSpent(3), False, "_Stop budget spent (3 objections this session)"),
        (ev.HookInjected("_PostCompact", "fake", "todo"), False, "hook _PostCompact from fake added context"),
        (ev.CompactionFinished(7000, 900, True), False, "compacted: ~7000 → ~900 tokens"),
        (ev.CompactionFinished(7000, 7000, False, "boom"), False, "compaction failed: boom"),
        (
            ev.ApiRetry(1, "500 (internal server error)", 0.6),
            False,
            "API error 500 (internal server error); retry 1 in 0.6 s",
        ),
        (ev.ApiWaiting(15, True), False, "waiting for the API: 15 s"),
        (ev.HookFailed("_Stop", "fake", "crashed"), True, "hook _Stop on fake failed: crashed"),
        (ev.HookCalled("_Stop", ("fake", "other")), True, "hook _Stop → fake, other"),
        (
            ev.ModelReplied("end_turn", Usage(1000, 100, 2000, 0), 0.5, 0.0051),
            True,
            "in 1000, cache read 2000, cache write 0, out 100, $0.0051",
        ),
    ],
)
def test_a_person_reads_each_event_as_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str], event: Event, verbose: bool, line: str
) -> None:
    from sprout_agent.faces.terminal.render import TerminalRenderer

    renderer = TerminalRenderer(interactive=False, verbose=verbose)
    renderer(event)
    renderer.close()
    out, err = capsys.readouterr()
    assert out == "" and line in err


def test_a_finished_tool_is_one_compact_line_with_its_arguments_and_status(capsys: pytest.CaptureFixture[str]) -> None:
    from sprout_agent.faces.terminal.render import TerminalRenderer

    renderer = TerminalRenderer(interactive=False, verbose=False)
    renderer(ev.ToolStarted("t1", "fake__echo", "fake", "echo", {"text": "one"}))
    renderer(ev.ToolFinished("t1", "fake__echo", False, 0.01, "one", (Text("one"),)))
    renderer(ev.ToolStarted("t2", "fake__fail", "fake", "fail", {}))
    renderer(ev.ToolFinished("t2", "fake__fail", True, 0.01, "this tool failed on purpose"))
    _, err = capsys.readouterr()
    echo_line, fail_line = err.strip().splitlines()
    assert "fake__echo" in echo_line and "text=one" in echo_line and "ok" in echo_line
    assert "fake__fail" in fail_line and "error this tool failed on purpose" in fail_line


def test_the_model_cost_per_response_is_the_ledger_price() -> None:
    from sprout_agent.core.ledger import Ledger

    # Sonnet prices: 1000 × $3 + 100 × $15 + 2000 × $0.30 per million tokens = $0.0051.
    assert Ledger(MODEL).add(Usage(1000, 100, 2000, 0)) == pytest.approx(0.0051)


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ('{"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "a"}]}}', "a"),
        ('{"type": "user", "message": {"role": "user", "content": "two"}}', "two"),
        ('{"type": "user", "text": "short form"}', "short form"),
    ],
)
def test_a_stdin_json_line_in_each_accepted_form_is_the_users_text(line: str, text: str) -> None:
    from sprout_agent.faces.sdk.user_lines import parse_user_line

    assert parse_user_line(line) == text


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{nope", "not JSON"),
        ('{"type": "assistant", "text": "no"}', 'expected an object with "type": "user"'),
        ('{"type": "user"}', 'expected "text" or "message"'),
        ('{"type": "user", "text": "  "}', "the user message is empty"),
        ('{"type": "user", "message": {"content": [{"type": "image"}]}}', "a base64 source"),
        ('{"type": "user", "message": {"content": [{"type": "audio"}]}}', "only text, image and document blocks"),
    ],
)
def test_a_malformed_stdin_json_line_says_what_is_wrong(line: str, problem: str) -> None:
    from sprout_agent.faces.sdk.user_lines import parse_user_line

    with pytest.raises(ValueError, match=problem):
        parse_user_line(line)


@pytest.mark.parametrize("forward", [False, True])
def test_a_subagents_text_reaches_stream_json_only_with_forward_subagent_text(forward: bool) -> None:
    out = io.StringIO()
    sink = JsonlSink(out, stream=True)
    sink.forward_subagent_text = forward
    sink.init(InitInfo(SESSION_ID, MODEL, CWD, [], [], [], resumed=False))
    for event in subagent_events():
        sink(event)
    nested = [line for line in valid_lines(out.getvalue()) if line.get("parent_tool_use_id") == "toolu_task"]
    kinds = [block["type"] for line in nested if line["type"] == "assistant" for block in line["message"]["content"]]
    assert kinds == (["text", "tool_use"] if forward else ["tool_use"])
    assert [line["type"] for line in nested] == ["assistant", "user", "system"]  # the call, its result, the warning


def test_a_script_reads_one_waiting_line_a_quiet_spell_however_long_it_lasts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sprout_agent.faces.terminal.render import TerminalRenderer

    spell = [ev.ApiWaiting(15, True), ev.ApiWaiting(30, False), ev.ApiWaiting(45, False)]
    script = TerminalRenderer(interactive=False, verbose=False)
    for event in spell:
        script(event)
    script.close()
    assert capsys.readouterr().err.count("waiting for the API") == 1
