"""The replay of a resumed conversation before the prompt: prompts, answers clipped, one line per tool call."""

from __future__ import annotations

from pathlib import Path

from sprout_agent.core.messages import Message, Text, ToolResult, ToolUse
from sprout_agent.faces.repl.view import REPLAY_MESSAGES, replay_lines


def test_a_resumed_conversation_replays_prompts_answers_and_one_line_per_tool_call() -> None:
    history = [
        Message("user", (Text("fix the test"),)),
        Message("assistant", (Text("Looking."), ToolUse("t1", "dev__bash", {"command": "pytest -q"}))),
        Message("user", (ToolResult("t1", (Text("1 failed"),), is_error=True),)),
        Message("assistant", (Text("x" * 2000),)),
    ]
    lines = replay_lines(history)
    assert lines[:4] == [
        ("› fix the test", "bold"),
        ("Looking.", ""),
        ('⏺ dev__bash {"command": "pytest -q"}', "cyan"),
        ("  ✗ failed", "red"),
    ]
    assert len(lines) == 5 and len(lines[4][0]) < 400  # a long answer is clipped, not replayed whole


def test_only_the_tail_of_a_long_conversation_is_replayed_and_the_rest_is_counted() -> None:
    history = [Message("user" if i % 2 == 0 else "assistant", (Text(f"message {i}"),)) for i in range(50)]
    lines = replay_lines(history)
    assert lines[0] == (f"… {50 - REPLAY_MESSAGES} earlier messages", "dim")
    assert lines[-1] == ("message 49", "") and len(lines) == REPLAY_MESSAGES + 1


def test_a_replayed_prompt_shows_its_at_file_not_the_file_and_a_cut_call_as_cancelled() -> None:
    typed = 'fix @calc.py\n\n<file path="calc.py">\ndef add(a, b):\n    return a - b\n</file>'
    history = [
        Message("user", (Text(typed),)),
        Message("assistant", (ToolUse("t1", "dev__bash", {"command": "sleep 60"}),)),
        Message("user", (ToolResult("t1", (Text("interrupted: the call was cancelled"),), is_error=True),)),
    ]
    lines = replay_lines(history)
    assert lines[0] == ("› fix @calc.py", "bold") and lines[-1] == ("  ✗ cancelled", "yellow")


def test_a_resumed_sessions_cost_goes_on_from_its_recorded_total(tmp_path: Path) -> None:
    from sprout_agent.core.ledger import Ledger
    from sprout_agent.session.store import SessionStore, load

    transcript = SessionStore.new(tmp_path, "0123", str(tmp_path), "claude-sonnet-5-5")
    transcript.appended(Message("user", (Text("hi"),)))
    transcript.spent(0.25)
    transcript.spent(0.5)
    transcript.close()
    resumed = load(tmp_path / "0123.jsonl")
    assert resumed.cost_usd == 0.5
    ledger = Ledger("claude-sonnet-5-5", earlier=resumed.cost_usd)
    assert "(the session: $0.5000)" in ledger.summary() and ledger.cost == 0.0  # a budget counts this run only
