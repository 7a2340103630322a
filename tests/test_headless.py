"""The headless face's contract in-process (tests/headless_here.py): json and stream-json results (every line checked
against the schema), exit codes in the result, stdin JSON lines as turns, progress on stderr; tools and hooks from
an MCP server in this process (tests/inproc_fake.py). What only a process shows (the CLI's flags, signals, exit
paths, a pipe to jq) is in tests/test_scripting.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.options import Options
from sprout_agent.core.compaction import SUMMARY_SYSTEM
from sprout_agent.core.limits import Limits
from tests.api_rules import assert_valid_request
from tests.fake_anthropic import FakeAnthropic, error, reply, tool_use
from tests.harness import API_KEY, result_text, tool_results
from tests.headless_here import headless
from tests.inproc_fake import fake_in_process
from tests.stream_schema import of_type, stream, texts, types, valid_lines
from tests.stream_schema import result_text as line_text
from tests.stream_schema import tool_results as line_results


def stream_in(cwd: Path) -> Options:
    """`--input-format stream-json --output-format stream-json`, prompts from stdin."""
    return Options(None, cwd=cwd, input_format="stream-json", output_format="stream-json")


def user_line(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})


@pytest.mark.e2e
def test_json_output_is_one_object_and_verbose_progress_goes_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Also the settings' wiring: a small window compacts, and _PostCompact of an allowlisted server injects.
    script = [
        reply(tool_use("fake__echo", {"text": "x" * 400}), usage={"input_tokens": 7000, "output_tokens": 300}),
        reply("## Summary\nEchoed once."),
        reply("The answer is 42.", usage={"input_tokens": 900}),
    ]
    env = {
        "SPROUT_AGENT_MAX_CONTEXT_TOKENS": "10000",
        "SPROUT_AGENT_MAX_OUTPUT_TOKENS": "1000",
        "MCP_HOOK_SERVERS": "fake, ghost",
    }
    server = fake_in_process(postcompact="open: write tests")
    with FakeAnthropic(script) as fake:
        options = Options("please echo", cwd=tmp_path, output_format="json", verbose=True)
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, env=env, in_process=[server])
    assert run.code == 0, run.stderr
    (result,) = valid_lines(run.stdout)
    assert result["type"] == "result" and result["result"] == "The answer is 42."
    assert result["stop_reason"] == "end_turn" and result["num_turns"] == 2 and result["exit_code"] == 0
    assert result["subtype"] == "success" and result["is_error"] is False
    assert len(result["session_id"]) == 36 and result["errors"] == []
    usage_keys = {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"}
    assert set(result["usage"]) == {*usage_keys, "server_tool_use"}
    assert result["total_cost_usd"] > 0 and isinstance(result["duration_ms"], int)
    assert 0 < result["duration_api_ms"] <= result["duration_ms"]
    assert "fake__echo" in run.stderr and "⏺" in run.stderr
    assert "compacted" in run.stderr and "hook _PostCompact from fake added context" in run.stderr
    assert "ghost" in run.stderr  # a listed name no server has is a warning
    summary, after = fake.requests[1].body, fake.requests[2].body
    assert "tools" not in summary and summary["system"][0]["text"] == SUMMARY_SYSTEM
    (injected,) = tool_results(after)
    assert json.loads(result_text(injected)) == {"hook": "_PostCompact", "server": "fake", "text": "open: write tests"}


def test_api_error_ends_the_stream_with_an_error_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic([error(400, message="bad thing")]) as fake:
        run = headless(
            tmp_path, monkeypatch, Options("go", cwd=tmp_path, output_format="stream-json"), fake=fake, servers={}
        )
    assert run.code == 1
    lines = stream(run.stdout)
    assert types(lines)[0] == "init"
    result = lines[-1]
    assert result["exit_code"] == 1 and result["is_error"] is True and result["stop_reason"] == "error"
    assert len(result["errors"]) == 1 and "400" in result["errors"][0] and "bad thing" in result["errors"][0]
    # Claude Code's shape, which the SDKs turn into their ResultError: the cause in `result`
    assert (result["subtype"], result["terminal_reason"], result["api_error_status"]) == ("success", "api_error", 400)
    assert result["result"] == result["errors"][0]
    assert run.stderr.strip().splitlines()[-1].startswith("sprout-agent: API request failed: 400")


@pytest.mark.e2e
def test_budget_is_exit_4_in_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = {"input_tokens": 1_000_000, "output_tokens": 10}
    script = [reply(tool_use("fake__echo", {"text": "x"}), usage=big), reply("never")]
    with FakeAnthropic(script) as fake:
        options = Options("go", cwd=tmp_path, output_format="stream-json", limits=Limits(max_budget_usd=1.0))
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, in_process=[fake_in_process()])
    assert run.code == 4
    result = stream(run.stdout)[-1]
    assert result["exit_code"] == 4 and result["stop_reason"] == "budget"
    assert result["subtype"] == "error_max_budget_usd" and result["is_error"] is True
    assert result["total_cost_usd"] == pytest.approx(3.00015)
    assert len(of_type(stream(run.stdout), "result")) == 1  # the turn's result is the run's
    assert result["usage"]["input_tokens"] == 1_000_000


def test_stream_json_input_runs_each_line_as_a_turn_of_one_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin = "\n".join([user_line("first question"), "", json.dumps({"type": "user", "text": "second question"})])
    with FakeAnthropic([reply("first answer"), reply("second answer")]) as fake:
        run = headless(tmp_path, monkeypatch, stream_in(tmp_path), fake=fake, servers={}, stdin=stdin)
    assert run.code == 0, run.stderr
    second = fake.requests[1].body
    texts = [(m["role"], m["content"][0]["text"]) for m in second["messages"]]
    assert texts == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
    ]
    assert_valid_request(second)
    lines = stream(run.stdout)
    results = of_type(lines, "result")  # one per answered message, the last one the run's
    assert [r["result"] for r in results] == ["first answer", "second answer"]
    assert [r["num_turns"] for r in results] == [1, 1] and lines[-1] is results[-1]
    assert [r["subtype"] for r in results] == ["success", "success"]
    assert results[1]["total_cost_usd"] > results[0]["total_cost_usd"] > 0  # the session's running total


def test_stream_json_input_without_any_message_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic([]) as fake:
        run = headless(tmp_path, monkeypatch, stream_in(tmp_path), fake=fake, servers={}, stdin="\n")
    assert run.code == 2
    lines: list[dict[str, Any]] = stream(run.stdout)
    assert "no user message" in lines[-1]["errors"][0]
    assert fake.requests == []


@pytest.mark.e2e
def test_stream_json_is_init_then_events_then_result_through_tools_and_a_hook_objection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        reply("Echoing.", tool_use("fake__echo", {"text": "one"}, id="toolu_1")),
        reply(tool_use("fake__add", {"a": 2, "b": 3}, id="toolu_2"), tool_use("fake__fail", id="toolu_3")),
        reply("All done."),
        reply("Second try."),
    ]
    server = fake_in_process(stop="tests are still red")  # echo, add, fail and a _Stop hook, in this process
    with FakeAnthropic(script) as fake:
        # --verbose, as the SDKs always pass it: stream-json still keeps progress off stderr
        options = Options("go", cwd=tmp_path.resolve(), output_format="stream-json", verbose=True)
        env = {"MCP_HOOK_SERVERS": "fake"}
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, env=env, in_process=[server])
    assert run.code == 0, run.stderr
    lines = stream(run.stdout)
    init, result = lines[0], lines[-1]
    assert len({line["uuid"] for line in lines}) == len(lines)  # every line its own uuid
    assert API_KEY not in run.stdout  # init names where the key came from, never the key
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert init["schema_version"] == 2 and init["cwd"] == str(tmp_path.resolve())
    assert init["mcp_servers"] == [
        {
            "name": "fake",
            "status": "connected",
            "state": "running",
            "transport": "stdio",
            "tools": 3,
            "hooks": 1,
            "error": "",
        }
    ]
    # The SDKs' names for MCP tools; the model keeps seeing ours.
    assert "mcp__fake__echo" in init["tools"] and "fake__echo" in init["model_tools"] and init["resumed"] is False
    assert init["permissionMode"] == "bypassPermissions" and init["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert init["hooks"] == [{"server": "fake", "hook": "_Stop"}]
    started = of_type(lines, "tool_started")
    assert [(s["id"], s["name"], s["server"], s["tool"]) for s in started] == [
        ("toolu_1", "mcp__fake__echo", "fake", "echo"),
        ("toolu_2", "mcp__fake__add", "fake", "add"),
        ("toolu_3", "mcp__fake__fail", "fake", "fail"),
    ]
    assert started[1]["arguments"] == {"a": 2, "b": 3}
    results = line_results(lines)
    assert line_text(results["toolu_1"]) == "one" and results["toolu_1"]["is_error"] is False
    assert line_text(results["toolu_2"]) == "5" and results["toolu_3"]["is_error"] is True
    finished = {f["id"]: f for f in of_type(lines, "tool_finished")}
    assert finished["toolu_2"]["server"] == "fake" and finished["toolu_3"]["is_error"] is True
    (called,) = of_type(lines, "hook_called")
    assert called.pop("uuid")
    assert called == {
        "type": "system",
        "subtype": "hook_called",
        "session_id": init["session_id"],
        "hook": "_Stop",
        "servers": ["fake"],
    }
    (objected,) = of_type(lines, "hook_objected")
    assert objected["server"] == "fake" and objected["text"] == "tests are still red"
    assert texts(lines) == ["Echoing.", "All done.", "Second try."]
    replies = of_type(lines, "assistant")
    assert len(replies) == 4 and [r["message"]["stop_reason"] for r in replies][-1] == "end_turn"
    assert all(r["message"]["id"].startswith("msg_") and r["message"]["usage"]["output_tokens"] > 0 for r in replies)
    assert types(lines).index("hook_objected") < types(lines).index("result")
    assert types(lines).count("result") == 1  # one prompt: its turn's result is the run's
    assert result["result"] == "Second try." and result["stop_reason"] == "end_turn" and result["subtype"] == "success"
    assert result["exit_code"] == 0 and result["is_error"] is False and result["errors"] == []
    assert result["session_id"] == init["session_id"] and result["num_turns"] == 4
    assert result["usage"]["input_tokens"] > 0 and result["usage"]["output_tokens"] > 0
    assert result["total_cost_usd"] > 0 and result["duration_ms"] > 0 and result["permission_denials"] == []
    (per_model,) = result["modelUsage"].values()
    assert per_model["costUSD"] == pytest.approx(result["total_cost_usd"])  # no compaction here: the same spend
    assert per_model["outputTokens"] == sum(r["message"]["usage"]["output_tokens"] for r in replies)
    assert "⏺" not in run.stderr and "server" not in run.stderr  # no progress on stderr, --verbose or not


@pytest.mark.e2e
def test_max_turns_is_exit_3_in_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [reply(tool_use("fake__echo", {"text": str(i)})) for i in range(3)]
    with FakeAnthropic(script) as fake:
        options = Options("go", cwd=tmp_path, output_format="json", verbose=True, limits=Limits(max_requests=2))
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, in_process=[fake_in_process()])
    assert run.code == 3
    (result,) = valid_lines(run.stdout)
    assert result["exit_code"] == 3 and result["stop_reason"] == "max_turns" and result["num_turns"] == 2
    assert result["subtype"] == "error_max_turns" and result["is_error"] is True
    assert "fake__echo" in run.stderr and "⏺" in run.stderr  # -v: progress on stderr


def test_partial_messages_stream_the_raw_events_that_make_up_each_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = Options("go", cwd=tmp_path, output_format="stream-json")
    with FakeAnthropic([reply("Hello from the stream."), reply("Again.")]) as fake:
        partial = replace(options, include_partial_messages=True)
        run = headless(tmp_path, monkeypatch, partial, fake=fake, servers={})
        without = headless(tmp_path, monkeypatch, options, fake=fake, servers={})
    assert run.code == 0, run.stderr
    lines = stream(run.stdout)
    events = [line["event"] for line in of_type(lines, "stream_event")]
    kinds = [event["type"] for event in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"content_block_start", "content_block_delta", "content_block_stop", "message_delta"} <= set(kinds)
    deltas = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert deltas == texts(lines)[0] == "Hello from the stream."
    (assistant,) = of_type(lines, "assistant")
    assert events[0]["message"]["id"] == assistant["message"]["id"]  # the same response, whole after its events
    assert types(lines).index("assistant") > types(lines).index("stream_event")
    assert without.code == 0 and "stream_event" not in without.stdout  # off unless asked


def test_stream_json_in_and_out_gives_each_turn_its_result_and_a_bad_line_one_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin = "\n".join([user_line("one"), "{nope", user_line("never read")])
    with FakeAnthropic([reply("answer one")]) as fake:
        run = headless(tmp_path, monkeypatch, stream_in(tmp_path), fake=fake, servers={}, stdin=stdin)
    assert run.code == 2
    lines = stream(run.stdout)
    first, last = of_type(lines, "result")
    assert first["result"] == "answer one" and first["subtype"] == "success" and first["exit_code"] == 0
    assert last is lines[-1] and last["subtype"] == "error_during_execution" and last["exit_code"] == 2
    assert last["errors"][0].startswith("stdin line 2: not JSON")
    assert len(fake.requests) == 1
