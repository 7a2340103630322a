"""Compaction, prompt caching and the ledger: trigger math, history after compaction, and the CLI paths."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.compaction import (
    SUMMARY_SYSTEM,
    Compactor,
    drop_oldest,
    estimate_tokens,
    handoff_history,
    parse_threshold,
    summary_request,
)
from sprout_agent.errors import ApiError, UsageError
from sprout_agent.events import Event, Notice
from sprout_agent.messages import Message, Text, ToolResult, ToolUse, Usage, user_text
from sprout_agent.protocols import ModelReply, ModelRequest
from tests.fake_anthropic import FakeAnthropic, error, reply, tool_use
from tests.harness import assert_history_valid, fake_server, result_text, run_agent, tool_results

pytestmark = pytest.mark.anyio


class ScriptedModel:
    """A `protocols.Model` double answering summary requests from a list (an exception = a failure)."""

    name = "claude-test"

    def __init__(self, answers: list[str | Exception]) -> None:
        self.answers = answers
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return ModelReply((Text(answer),), "end_turn", Usage(100, 10))


def compactor(model: ScriptedModel, events: list[Event], *, threshold: int = 1000, cap: int = 10) -> Compactor:
    return Compactor(
        model=model,
        window=10_000,
        threshold=threshold,
        max_compactions=cap,
        emit=events.append,
        on_usage=lambda u: None,
    )


def long_history(rounds: int) -> list[Message]:
    history = [user_text("Fix the failing test in calc.py. Never touch setup.py.")]
    for index in range(rounds):
        history.append(Message("assistant", (Text(f"step {index}"), ToolUse(f"t{index}", "dev__bash", {"c": "x"}))))
        history.append(Message("user", (ToolResult(f"t{index}", (Text("output " * 200),)),)))
    return history


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, 7200), ("", 7200), ("0.5", 4500), ("1", 9000), ("5000", 5000), ("off", None), ("0", None)],
)
def test_threshold_parsing(raw: str | None, expected: int | None) -> None:
    assert parse_threshold(raw, window=10_000, reserve=1_000) == expected


@pytest.mark.parametrize("raw", ["-1", "lots", "0.0"])
def test_malformed_threshold_is_a_usage_error(raw: str) -> None:
    with pytest.raises(UsageError):
        parse_threshold(raw, window=10_000, reserve=1_000)


@pytest.mark.parametrize(("estimate", "fires"), [(999, False), (1000, False), (1001, True)])
def test_threshold_fires_only_when_passed(estimate: int, fires: bool) -> None:
    assert compactor(ScriptedModel([]), []).due(estimate, request_number=5) is fires


def test_summary_request_has_no_tools_and_fits_the_window() -> None:
    history = long_history(200)  # far more than a 10k window
    request = summary_request(history, window=10_000, focus="the calc bug")
    assert request.tools == () and request.system == SUMMARY_SYSTEM
    (message,) = request.messages
    assert estimate_tokens(request.messages) < 10_000
    assert "earlier messages did not fit" in message.text and "Focus especially on: the calc bug" in message.text
    assert "step 199" in message.text  # the newest part is what is kept


def test_handoff_keeps_the_users_words_verbatim_and_the_current_request_last() -> None:
    fresh = handoff_history("SUMMARY", ["first ask", "second ask"], "second ask")
    (message,) = fresh
    texts = [block.text for block in message.content if isinstance(block, Text)]
    assert "SUMMARY" in texts[0] and "first ask" in texts[1] and texts[-1] == "second ask"


async def test_compaction_replaces_history_with_summary_and_current_request() -> None:
    events: list[Event] = []
    model = ScriptedModel(["the summary"])
    outcome = await compactor(model, events).compact(long_history(5), "fix it", reason="auto")
    assert outcome.summarised
    assert outcome.history[0].role == "user" and "the summary" in outcome.history[0].text
    assert outcome.history[0].content[-1] == Text("fix it")


async def test_circuit_breaker_after_three_failures_then_truncation() -> None:
    events: list[Event] = []
    model = ScriptedModel([ApiError("boom"), ApiError("boom"), ApiError("boom")])
    rails = compactor(model, events, threshold=2_000)
    history = long_history(20)
    for _ in range(3):
        outcome = await rails.compact(history, "fix it", reason="auto")
        assert not outcome.summarised and estimate_tokens(outcome.history) <= 2_000
    assert not rails.auto_enabled
    assert any(isinstance(e, Notice) and "3 compactions failed" in e.text for e in events)
    outcome = await rails.compact(history, "fix it", reason="auto")  # no fourth summary request
    assert len(model.requests) == 3 and not outcome.summarised


async def test_thrash_guard_and_cap_fall_back_to_truncation() -> None:
    events: list[Event] = []
    rails = compactor(ScriptedModel(["s1"]), events, cap=1)
    assert rails.due(5_000, request_number=1)
    assert (await rails.compact(long_history(10), None, reason="auto")).summarised
    assert rails.due(5_000, request_number=2)  # consecutive and still over: no progress
    assert not rails.auto_enabled
    assert not (await rails.compact(long_history(10), None, reason="auto")).summarised


def test_dropping_oldest_turns_keeps_the_history_valid() -> None:
    kept = drop_oldest(long_history(30), target_tokens=3_000)
    assert estimate_tokens(kept) <= 3_000 and kept[0].role == "user"
    for before, after in itertools.pairwise(kept):
        assert before.role != after.role
        uses = [b.id for b in before.content if isinstance(b, ToolUse)]
        if uses:
            assert [b.tool_use_id for b in after.content if isinstance(b, ToolResult)] == uses


# --- through the CLI ---------------------------------------------------------------------------------

SMALL_WINDOW = {"SPROUT_AGENT_MAX_CONTEXT_TOKENS": "10000", "SPROUT_AGENT_MAX_OUTPUT_TOKENS": "1000"}


def is_summary(body: dict[str, Any]) -> bool:
    return "tools" not in body and body["system"][0]["text"] == SUMMARY_SYSTEM


def test_one_shot_run_compacts_and_post_compact_hooks_inject(tmp_path: Path) -> None:
    script = [
        reply(tool_use("fake__echo", {"text": "x" * 400}), usage={"input_tokens": 7000, "output_tokens": 300}),
        reply("## Summary\nEchoed once."),
        reply("finished", usage={"input_tokens": 900}),
    ]
    env = {**SMALL_WINDOW, "MCP_HOOK_SERVERS": "fake"}
    servers = {"fake": fake_server(postcompact="open: write tests")}
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "please echo"], fake=fake, servers=servers, env=env)
    assert run.code == 0, run.stderr
    assert run.stdout == "finished\n"
    summary_body, after = fake.requests[1].body, fake.requests[2].body
    assert is_summary(summary_body) and "please echo" in summary_body["messages"][0]["content"][0]["text"]
    first = after["messages"][0]["content"]
    assert "Echoed once." in first[0]["text"] and first[-1]["text"] == "please echo"
    (injected,) = tool_results(after)
    assert json.loads(result_text(injected)) == {"hook": "_PostCompact", "server": "fake", "text": "open: write tests"}
    assert_history_valid(after)
    assert "compacted" in run.stderr


def test_no_compaction_below_the_threshold(tmp_path: Path) -> None:
    script = [
        reply(tool_use("fake__echo", {"text": "x"}), usage={"input_tokens": 6000, "output_tokens": 100}),
        reply("finished"),
    ]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={"fake": fake_server()}, env=SMALL_WINDOW)
    assert run.code == 0, run.stderr
    assert not any(is_summary(r.body) for r in fake.requests)


def test_prompt_too_long_compacts_and_retries_once(tmp_path: Path) -> None:
    too_long = error(400, message="prompt is too long: 250000 tokens > 200000 maximum", retry_after_ms=None)
    with FakeAnthropic([too_long, reply("summary"), reply("recovered")]) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={})
    assert run.code == 0, run.stderr
    assert run.stdout == "recovered\n"
    assert is_summary(fake.requests[1].body)


def test_cache_breakpoints_and_a_byte_stable_prefix(tmp_path: Path) -> None:
    script = [reply(tool_use("fake__echo", {"text": str(i)})) for i in range(3)] + [reply("done")]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers={"fake": fake_server()})
    assert run.code == 0, run.stderr
    bodies = [r.body for r in fake.requests]
    for body in bodies:
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    prefixes = {json.dumps([b["tools"], b["system"]]) for b in bodies}
    assert len(prefixes) == 1


def test_budget_ends_the_session_with_its_own_exit_code(tmp_path: Path) -> None:
    big = {"input_tokens": 1_000_000, "output_tokens": 10}
    script = [reply(tool_use("fake__echo", {"text": "x"}), usage=big), reply("never")]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["--max-budget-usd", "1", "-p", "go"], fake=fake, servers={"fake": fake_server()})
    assert run.code == 4
    assert len(fake.requests) == 1
    assert "cost $3.0" in run.stderr  # 1M input tokens at the Sonnet price


def test_a_request_without_tools_carries_no_tool_blocks() -> None:
    from sprout_agent.llm import to_api_messages

    history = long_history(2)
    with_tools = to_api_messages(history)
    without = to_api_messages(history, tools_offered=False)
    assert any(b["type"] == "tool_use" for m in with_tools for b in m["content"])
    assert all(b["type"] in ("text", "image") for m in without for b in m["content"])
    assert "[tool call dev__bash" in json.dumps(without)


def test_verbose_shows_usage_and_cost_per_response(tmp_path: Path) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 2000}
    with FakeAnthropic([reply("done", usage=usage)]) as fake:
        run = run_agent(tmp_path, ["-v", "-p", "go"], fake=fake, servers={})
    assert run.code == 0, run.stderr
    # Sonnet prices: 1000 × $3 + 100 × $15 + 2000 × $0.30 per million tokens = $0.0051.
    assert "in 1000, cache read 2000, cache write 0, out 100, $0.0051" in run.stderr
