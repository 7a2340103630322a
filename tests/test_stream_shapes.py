"""stream-json lines in Claude Code's shapes, in-process: the sink fed events, each line checked against the schema
and, where the Python claude-agent-sdk is installed, read by the SDK's own message parser."""

from __future__ import annotations

import io
import json
from typing import Any

import anyio
import pytest

from sprout_agent.core import events as ev
from sprout_agent.core.messages import Image, Text, Thinking, ToolUse, Usage, user_text
from sprout_agent.core.permission_mode import PermissionMode, parse_mode
from sprout_agent.core.protocols import ModelRequest
from sprout_agent.faces.headless.jsonl import InitInfo, JsonlSink, ResultInfo, ServerInfo
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply
from tests.harness import API_KEY
from tests.loop_doubles import MODEL
from tests.stream_schema import final, kind, of_type, valid_lines

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
SERVERS = [
    ServerInfo("up", "running", 2, 0, ""),
    ServerInfo("booting", "starting", 0, 0, ""),
    ServerInfo("broken", "failed", 0, 0, "exited with code 3"),
    ServerInfo("gone", "dead", 0, 0, "crashed"),
    ServerInfo("remote", "needs login", 0, 0, "run: sprout-agent mcp login remote"),
    ServerInfo("evil", "not approved", 0, 0, "run: sprout-agent mcp approve evil"),
]


def init_info(**overrides: Any) -> InitInfo:
    fields: dict[str, Any] = {
        "session_id": "s1",
        "model": "claude-test",
        "cwd": "/work",
        "servers": SERVERS,
        "tools": ["mcp__up__echo", "mcp__up__add"],
        "hooks": [],
        "resumed": False,
        "model_tools": ["up__echo", "up__add"],
        "permission_mode": PermissionMode.ASK,
        "api_key_source": "ANTHROPIC_API_KEY",
    }
    return InitInfo(**(fields | overrides))


def streamed(*events: ev.Event, stream: bool = True) -> tuple[JsonlSink, io.StringIO]:
    out = io.StringIO()
    sink = JsonlSink(out, stream=stream)
    sink.init(init_info())
    for event in events:
        sink(event)
    return sink, out


def reply_with_a_call() -> ev.AssistantMessage:
    content = (
        Thinking("the user wants an echo", "sig-123"),
        Text("Echoing."),
        ToolUse("toolu_1", "up__echo", {"text": "hi"}),
    )
    usage = Usage(100, 20, 5, 1)
    return ev.AssistantMessage("msg_1", "claude-test", content, "tool_use", usage, {"up__echo": "mcp__up__echo"})


def test_init_is_claude_codes_system_init_with_our_details_as_extra_fields() -> None:
    _, out = streamed()
    (init,) = valid_lines(out.getvalue())
    assert (init["type"], init["subtype"], init["session_id"]) == ("system", "init", "s1")
    assert init["uuid"] and init["schema_version"] == 2
    assert [(s["name"], s["status"], s["state"]) for s in init["mcp_servers"]] == [
        ("up", "connected", "running"),
        ("booting", "pending", "starting"),
        ("broken", "failed", "failed"),
        ("gone", "failed", "dead"),
        ("remote", "needs-auth", "needs login"),
        ("evil", "disabled", "not approved"),
    ]
    assert init["tools"] == ["mcp__up__echo", "mcp__up__add"] and init["model_tools"] == ["up__echo", "up__add"]
    assert init["permissionMode"] == "default" and init["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert init["slash_commands"] == [] and init["output_style"] == "default"


@pytest.mark.parametrize(
    ("ours", "claude"), [("auto", "bypassPermissions"), ("ask", "default"), ("read-only", "plan"), ("plan", "plan")]
)
def test_init_names_the_permission_mode_as_claude_code_does(ours: str, claude: str) -> None:
    out = io.StringIO()
    JsonlSink(out, stream=True).init(init_info(permission_mode=parse_mode(ours)))
    assert valid_lines(out.getvalue())[0]["permissionMode"] == claude


def test_a_reply_is_one_assistant_message_with_thinking_text_and_the_call_under_its_sdk_name() -> None:
    _, out = streamed(reply_with_a_call())
    (_, line) = valid_lines(out.getvalue())
    assert line["type"] == "assistant" and line["parent_tool_use_id"] is None and line["session_id"] == "s1"
    message = line["message"]
    assert (message["id"], message["type"], message["role"], message["model"]) == (
        "msg_1",
        "message",
        "assistant",
        "claude-test",
    )
    assert message["content"] == [
        {"type": "thinking", "thinking": "the user wants an echo", "signature": "sig-123"},
        {"type": "text", "text": "Echoing."},
        {"type": "tool_use", "id": "toolu_1", "name": "mcp__up__echo", "input": {"text": "hi"}},
    ]
    assert message["stop_reason"] == "tool_use" and message["stop_sequence"] is None
    assert message["usage"] == {
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_read_input_tokens": 5,
        "cache_creation_input_tokens": 1,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
    }


def test_a_tool_result_is_a_user_message_with_the_whole_result_then_our_timing() -> None:
    long = "line\n" * 200
    started = ev.ToolStarted("toolu_1", "up__echo", "up", "echo", {"text": "hi"})
    finished = ev.ToolFinished("toolu_1", "up__echo", False, 0.25, "line", (Text(long), Image("image/png", PNG)))
    _, out = streamed(started, finished)
    lines = valid_lines(out.getvalue())
    assert [kind(line) for line in lines] == ["init", "tool_started", "user", "tool_finished"]
    user = lines[2]
    assert user["parent_tool_use_id"] is None and user["message"]["role"] == "user"
    assert user["message"]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "is_error": False,
            "content": [
                {"type": "text", "text": long},  # whole, not the terminal's first line
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            ],
        }
    ]
    timing = lines[3]
    assert (timing["name"], timing["server"], timing["duration_ms"]) == ("mcp__up__echo", "up", 250)


@pytest.mark.parametrize(
    ("stop_reason", "subtype", "code"),
    [
        ("end_turn", "success", 0),
        ("max_tokens", "success", 1),
        ("max_turns", "error_max_turns", 3),
        ("budget", "error_max_budget_usd", 4),
    ],
)
def test_each_user_turn_ends_with_its_result(stop_reason: Any, subtype: str, code: int) -> None:
    replied = ev.ModelReplied(stop_reason, Usage(10, 2), 0.4, 0.001)
    turn = ev.TurnFinished(stop_reason, "the answer", 3, Usage(30, 6, 1, 2), 0.125, 1.5)
    _, out = streamed(replied, turn)
    result = final(valid_lines(out.getvalue()))
    assert (result["subtype"], result["exit_code"], result["is_error"]) == (subtype, code, code != 0)
    assert result["result"] == "the answer" and result["num_turns"] == 3 and result["stop_reason"] == stop_reason
    assert result["total_cost_usd"] == 0.125 and result["duration_ms"] == 1500 and result["duration_api_ms"] == 400
    assert result["usage"]["cache_read_input_tokens"] == 1 and result["usage"]["cache_creation_input_tokens"] == 2
    assert result["session_id"] == "s1" and result["permission_denials"] == [] and result["errors"] == []


def test_a_run_that_ends_after_its_turns_writes_no_second_result_but_a_failure_after_them_does() -> None:
    turn = ev.TurnFinished("end_turn", "done", 1, Usage(1, 1), 0.01, 0.1)
    outcome = ResultInfo("done", "end_turn", "s1", 1, Usage(1, 1), 0.01, 100, 0, [])
    sink, out = streamed(turn)
    sink.result(outcome, reported=True)
    assert [kind(line) for line in valid_lines(out.getvalue())] == ["init", "result"]

    sink, out = streamed(turn)
    sink.result(ResultInfo("", "error", "s1", 1, Usage(1, 1), 0.01, 100, 2, ["stdin line 2: not JSON"]))
    first, last = of_type(valid_lines(out.getvalue()), "result")
    assert (first["subtype"], last["subtype"]) == ("success", "error_during_execution")
    assert last["exit_code"] == 2 and last["errors"] == ["stdin line 2: not JSON"]


def test_model_usage_is_the_sessions_running_total_per_model() -> None:
    def replied(model: str, cost: float) -> ev.AssistantMessage:
        return ev.AssistantMessage("msg", model, (Text("x"),), "end_turn", Usage(100, 10, 5, 1, 1), cost_usd=cost)

    out = io.StringIO()
    sink = JsonlSink(out, stream=True)
    sink.init(init_info(context_window=200_000, max_output_tokens=32_000))
    for event in (
        replied("a", 0.25),
        ev.TurnFinished("end_turn", "x", 1, Usage()),
        replied("a", 0.5),
        replied("b", 1.0),
    ):
        sink(event)
    sink(ev.TurnFinished("end_turn", "x", 2, Usage()))
    first, second = of_type(valid_lines(out.getvalue()), "result")
    assert first["modelUsage"] == {
        "a": {
            "inputTokens": 100,
            "outputTokens": 10,
            "cacheReadInputTokens": 5,
            "cacheCreationInputTokens": 1,
            "webSearchRequests": 1,
            "costUSD": 0.25,
            "contextWindow": 200_000,
            "maxOutputTokens": 32_000,
        }
    }
    assert second["modelUsage"]["a"]["inputTokens"] == 200 and second["modelUsage"]["a"]["costUSD"] == 0.75
    assert second["modelUsage"]["b"]["costUSD"] == 1.0


def test_json_output_is_only_the_final_result_with_the_runs_api_time() -> None:
    sink, out = streamed(
        reply_with_a_call(),
        ev.ModelReplied("end_turn", Usage(1, 1), 0.3, 0.0),
        ev.TurnFinished("end_turn", "a", 1, Usage()),
        stream=False,
    )
    sink.result(ResultInfo("a", "end_turn", "s1", 1, Usage(1, 1), 0.5, 900, 0, []), reported=True)
    (result,) = valid_lines(out.getvalue())
    assert result["type"] == "result" and result["duration_api_ms"] == 300 and result["total_cost_usd"] == 0.5


def test_partial_messages_are_the_raw_stream_events() -> None:
    raw = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}
    _, out = streamed(ev.StreamEvent(raw))
    (_, line) = valid_lines(out.getvalue())
    assert line["type"] == "stream_event" and line["event"] == raw and line["parent_tool_use_id"] is None


def test_our_own_events_are_system_lines_with_our_subtypes() -> None:
    _, out = streamed(ev.Notice("watch out", "warning"), ev.ApiRetry(2, "529: overloaded", 1.5))
    (_, notice, retry) = valid_lines(out.getvalue())
    assert (notice["type"], notice["subtype"], notice["text"]) == ("system", "notice", "watch out")
    assert (retry["subtype"], retry["attempt"], retry["retry_delay_ms"]) == ("api_retry", 2, 1500)


def test_hostile_text_never_crashes_the_sink_and_stays_one_json_line() -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    sink = JsonlSink(out, stream=True)
    sink.init(init_info())
    hostile = "lone \ud800 surrogate, \x1b[2J escape, \u2028 separator"
    sink(ev.ToolStarted("t1", "up__echo", "up", "echo", {"text": hostile}))
    sink(ev.ToolFinished("t1", "up__echo", True, 0.0, hostile, (Text(hostile),)))
    sink(ev.AssistantMessage("msg_2", "m", (Text(hostile),), "end_turn", Usage()))
    lines = raw.getvalue().decode("utf-8").splitlines()
    assert len(lines) == 5 and all("\x1b" not in line for line in lines)
    assert json.loads(lines[2])["message"]["content"][0]["content"][0]["text"] == hostile


def test_every_line_is_one_the_python_agent_sdk_reads() -> None:
    parser = pytest.importorskip("claude_agent_sdk._internal.message_parser")
    types = pytest.importorskip("claude_agent_sdk.types")
    started = ev.ToolStarted("toolu_1", "up__echo", "up", "echo", {"text": "hi"})
    finished = ev.ToolFinished("toolu_1", "up__echo", False, 0.1, "hi", (Text("hi"),))
    raw = ev.StreamEvent({"type": "message_stop"})
    turn = ev.TurnFinished("end_turn", "hi", 2, Usage(5, 5), 0.01, 0.2)
    sink, out = streamed(ev.Notice("n"), raw, reply_with_a_call(), started, finished, turn)
    sink.result(ResultInfo("", "interrupted", "s1", 2, Usage(), 0.01, 300, 130, ["interrupted by SIGINT"]))
    parsed = [parser.parse_message(line) for line in valid_lines(out.getvalue())]
    assert [type(message).__name__ for message in parsed] == [
        "SystemMessage",  # init
        "SystemMessage",  # notice: a subtype of ours, which the SDK passes through
        "StreamEvent",
        "AssistantMessage",
        "SystemMessage",  # tool_started
        "UserMessage",
        "SystemMessage",  # tool_finished
        "ResultMessage",
        "ResultMessage",
    ]
    assistant = parsed[3]
    assert isinstance(assistant.content[0], types.ThinkingBlock) and assistant.content[2].name == "mcp__up__echo"
    assert parsed[5].content[0].tool_use_id == "toolu_1" and parsed[7].num_turns == 2
    assert parsed[8].subtype == "error_during_execution" and parsed[8].total_cost_usd == 0.01


@pytest.mark.anyio
async def test_the_model_client_emits_raw_events_only_for_the_loops_requests_when_asked() -> None:
    from sprout_agent.model.client import AnthropicModel

    loops = ModelRequest("system", (user_text("hi"),), (), partial=True)
    summary = ModelRequest("system", (user_text("summarise"),), ())  # compaction and sampling: never streamed
    emitted: list[ev.Event] = []
    with FakeAnthropic([reply("Hello there."), reply("A summary.")]) as fake:
        model = AnthropicModel(
            model=MODEL,
            max_tokens=100,
            emit=emitted.append,
            api_key=API_KEY,
            base_url=fake.base_url,
            partial_messages=True,
        )
        try:
            with anyio.fail_after(bounded(20)):
                answer = await model.complete(loops, lambda _: None)
                await model.complete(summary, lambda _: None)
        finally:
            await model.aclose()
    raw: list[dict[str, Any]] = [dict(e.event) for e in emitted if isinstance(e, ev.StreamEvent)]
    assert raw[0]["type"] == "message_start" and raw[-1] == {"type": "message_stop"}
    assert "".join(e["delta"]["text"] for e in raw if e["type"] == "content_block_delta") == "Hello there."
    started = raw[0]["message"]
    assert isinstance(started, dict) and started["id"] == answer.id and answer.id.startswith("msg_")


@pytest.mark.anyio
async def test_the_calls_the_permission_policy_refused_are_the_turns_permission_denials() -> None:
    from sprout_agent.core.permissions import Policy
    from tests.loop_doubles import build_loop, call
    from tests.loop_doubles import reply as model_reply

    script = [
        model_reply(call("fake__echo", "t_echo", text="hi"), call("fake__add", "t_add", a=1, b=2)),
        model_reply("the echo was refused"),
    ]
    loop = build_loop(script, permit=Policy(PermissionMode.AUTO, deny=["fake__echo"]))
    with anyio.fail_after(bounded(10)):
        await loop.turn("go")
    sink, out = streamed(*loop.events)
    result = final(valid_lines(out.getvalue()))
    assert result["permission_denials"] == [
        {"tool_name": "mcp__fake__echo", "tool_use_id": "t_echo", "tool_input": {"text": "hi"}}
    ]  # the allowed call is not in it
    sink.result(ResultInfo("", "interrupted", "s1", 2, Usage(), 0.0, 10, 130, ["interrupted by SIGINT"]))
    assert final(valid_lines(out.getvalue()))["permission_denials"] == []  # the turn's result took them


@pytest.mark.parametrize("raw", ['{"x": NaN}', '{"x": -Infinity}', "[1, 2]", '"text"'])
def test_a_tool_input_that_is_not_a_json_object_is_kept_as_text_so_every_line_stays_json(raw: str) -> None:
    from sprout_agent.model.reply_stream import tool_input

    assert tool_input(raw) == {"_invalid": raw}
    out = io.StringIO()
    sink = JsonlSink(out, stream=True)
    sink.init(init_info())
    sink(ev.ToolStarted("t1", "up__echo", "up", "echo", tool_input(raw)))
    assert valid_lines(out.getvalue())[1]["arguments"] == {"_invalid": raw}


def test_json_output_reports_the_runs_denials_and_no_line_for_a_call_cut_short() -> None:
    started = ev.ToolStarted("t1", "up__echo", "up", "echo", {"text": "hi"})
    refused = ev.ToolFinished("t1", "up__echo", True, 0.0, "denied", (Text("denied"),), denied=True)
    cut = ev.ToolStarted("t2", "up__add", "up", "add", {})
    sink, out = streamed(started, refused, ev.TurnFinished("end_turn", "a", 1, Usage()), cut, stream=False)
    sink.result(ResultInfo("", "interrupted", "s1", 2, Usage(), 0.0, 10, 130, ["interrupted by SIGINT"]))
    (result,) = valid_lines(out.getvalue())  # the one object, even with a call still open
    assert result["permission_denials"] == [
        {"tool_name": "mcp__up__echo", "tool_use_id": "t1", "tool_input": {"text": "hi"}}
    ]
