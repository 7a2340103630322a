"""The replay of a resumed conversation before the prompt: prompts, answers clipped, one line per tool call."""

from __future__ import annotations

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
