"""The headless face's contract in-process (tests/headless_here.py): json and stream-json results, exit codes in
the result, stdin JSON lines as turns, progress on stderr. What only a process shows (the CLI's flags, signals,
exit paths) is in tests/test_scripting.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.options import Options
from sprout_agent.core.compaction import SUMMARY_SYSTEM
from sprout_agent.core.limits import Limits
from tests.api_rules import assert_valid_request
from tests.fake_anthropic import FakeAnthropic, error, reply, tool_use
from tests.harness import fake_server, result_text, tool_results
from tests.headless_here import headless
from tests.stream_schema import of_type, stream, types, valid_lines


def stream_in(cwd: Path) -> Options:
    """`--input-format stream-json --output-format stream-json`, prompts from stdin."""
    return Options(None, cwd=cwd, input_format="stream-json", output_format="stream-json")


def user_line(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})


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
    servers = {"fake": fake_server(postcompact="open: write tests")}
    with FakeAnthropic(script) as fake:
        options = Options("please echo", cwd=tmp_path, output_format="json", verbose=True)
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers=servers, env=env)
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
    assert run.stderr.strip().splitlines()[-1].startswith("sprout-agent: API request failed: 400")


def test_budget_is_exit_4_in_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = {"input_tokens": 1_000_000, "output_tokens": 10}
    script = [reply(tool_use("fake__echo", {"text": "x"}), usage=big), reply("never")]
    with FakeAnthropic(script) as fake:
        options = Options("go", cwd=tmp_path, output_format="stream-json", limits=Limits(max_budget_usd=1.0))
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={"fake": fake_server()})
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
