"""What a person sees on a real pseudo-terminal, read through a terminal emulator (tests/screen.py): tool calls
live with a spinner, a failure marked ✗, an answer once in the scrollback, an edit's diff in the ask question."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import agent_command, agent_env, fake_server, write_config
from tests.screen import PtyScreen

pytestmark = pytest.mark.e2e
SPINNER = re.compile(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] fake__slow seconds=60")


def test_tool_lines_are_live_a_failure_is_marked_and_a_60_line_answer_is_in_the_scrollback_once(
    tmp_path: Path,
) -> None:
    """Also the session's basics (one process for all: each start costs seconds): /tools, Markdown, /servers."""
    gate = tmp_path / "let-slow-finish"  # the slow call runs until the test creates it: no clock decides
    config = write_config(tmp_path, {"fake": fake_server(slow_gate=str(gate))})
    answer = "Hello **there**\n\n" + "\n".join(f"- answer line {i:02d}" for i in range(60))
    script: list[Step] = [
        reply(tool_use("fake__slow", {"seconds": 60}, id="s"), tool_use("fake__fail", {}, id="f")),
        reply(answer),
    ]
    with (
        FakeAnthropic(script) as fake,
        PtyScreen(agent_command(["--config", str(config)]), agent_env(tmp_path, fake), tmp_path, rows=24) as term,
    ):
        term.expect("›")
        term.send("/tools\r")
        term.expect("fake__echo")
        term.send("go\r")
        # Live: the call's line, with its spinner, is on the screen while the call runs (it cannot end yet).
        term.wait_for(lambda: SPINNER.search(term.display()) is not None, "the running call's line with its spinner")
        term.expect("✗ fake__fail")  # the failed call ended while its sibling still runs
        # Still there once the frame that printed the failure is whole (the sibling cannot end: the gate is shut);
        # read mid-frame, the live region may be between its erase and its redraw.
        term.wait_for(lambda: SPINNER.search(term.display()) is not None, "the sibling's live line, still running")
        assert len(fake.requests) == 1  # the turn is still in its tool calls
        gate.touch()
        term.expect("answer line 59")
        assert "Hello there" in term.history()  # rendered as Markdown: no asterisks
        term.send("/servers\r")
        term.expect("running")
        term.send("/exit\r")
        code = term.close()
    screen = term.history()
    assert code == 0 and len(fake.requests) == 2
    assert "this tool failed on purpose" in screen and "✓ fake__slow seconds=60" in screen
    assert [screen.count(f"answer line {i:02d}") for i in range(60)] == [1] * 60
