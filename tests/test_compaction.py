"""Compaction on its own: trigger math, the summary request, the history after compaction, the safety rails.

The loop's use of it (auto at the threshold, reactive on prompt-too-long, `_PostCompact`, the truncation
fallback) is tested in tests/test_loop.py; prompt caching over the wire in tests/test_loop_wire.py.
"""

from __future__ import annotations

import itertools
import json

import pytest

from sprout_agent.core.compaction import (
    SUMMARY_SYSTEM,
    Compactor,
    drop_oldest,
    estimate_tokens,
    handoff_history,
    parse_threshold,
    summary_request,
)
from sprout_agent.core.errors import ApiError, UsageError
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.messages import Message, Text, ToolResult, ToolUse, Usage, user_text
from tests.loop_doubles import ScriptedModel, reply

pytestmark = pytest.mark.anyio


def summaries(*answers: str | Exception) -> ScriptedModel:
    """The scripted model answering summary requests in turn (an exception = a failed request)."""
    return ScriptedModel([reply(a, usage=Usage(100, 10)) if isinstance(a, str) else a for a in answers])


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
    assert compactor(summaries(), []).due(estimate, request_number=5) is fires


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
    model = summaries("the summary")
    outcome = await compactor(model, events).compact(long_history(5), "fix it", reason="auto")
    assert outcome.summarised
    assert outcome.history[0].role == "user" and "the summary" in outcome.history[0].text
    assert outcome.history[0].content[-1] == Text("fix it")


async def test_circuit_breaker_after_three_failures_then_truncation() -> None:
    events: list[Event] = []
    model = summaries(ApiError("boom"), ApiError("boom"), ApiError("boom"))
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
    rails = compactor(summaries("s1"), events, cap=1)
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


def test_a_request_without_tools_carries_no_tool_blocks() -> None:
    from sprout_agent.model.client import to_api_messages

    history = long_history(2)
    with_tools = to_api_messages(history)
    without = to_api_messages(history, tools_offered=False)
    assert any(b["type"] == "tool_use" for m in with_tools for b in m["content"])
    assert all(b["type"] in ("text", "image") for m in without for b in m["content"])
    assert "[tool call dev__bash" in json.dumps(without)
