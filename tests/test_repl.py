"""The interactive session on a real pseudo-terminal: prompt, streamed answer, slash commands, Ctrl-C, exit."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, Step, hang, reply, tool_use
from tests.harness import ANSI, Terminal, agent_command, agent_env, fake_server, read_log, tool_results, write_config

# test_permissions.py imports ANSI and Terminal from here; they live in tests/harness.py.
__all__ = ["ANSI", "Terminal"]

pytestmark = pytest.mark.e2e


# The first turn, /tools and /servers on a pty: tests/test_terminal_screen.py (one process for them all).


@pytest.mark.slow
def test_ctrl_c_cancels_the_turn_and_the_next_prompt_has_a_valid_history(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    script: list[Step] = [reply(tool_use("fake__slow", {"seconds": 30}, id="toolu_slow")), reply("second answer")]
    with FakeAnthropic(script) as fake:
        term = Terminal(agent_command(["--config", str(config)]), agent_env(tmp_path, fake), tmp_path)
        try:
            term.expect("›")
            term.send("start something slow\r")
            term.wait_until(lambda: bool(read_log(log)), "the slow call reaching the server")
            os.killpg(term.process.pid, signal.SIGINT)
            term.expect("cancelled")
            term.send("and now?\r")
            term.expect("second answer")
            term.seen = ""
            term.expect("›")  # the next prompt is up (raw mode), so Ctrl-D is a key, not a tty EOF
            term.send("\x04")  # Ctrl-D leaves
        finally:
            code = term.close()
    assert code == 0
    (interrupted,) = tool_results(fake.requests[1].body)
    assert interrupted["tool_use_id"] == "toolu_slow" and interrupted["is_error"]


@pytest.mark.slow
def test_ctrl_c_while_waiting_on_the_model(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    with FakeAnthropic([hang(), reply("after")]) as fake:
        term = Terminal(agent_command(["--config", str(config)]), agent_env(tmp_path, fake), tmp_path)
        try:
            term.expect("›")
            term.send("hang please\r")
            term.wait_until(lambda: bool(fake.requests), "the request reaching the model")
            os.killpg(term.process.pid, signal.SIGINT)
            term.expect("cancelled")
            term.send("again\r")
            term.expect("after")
            term.send("/exit\r")
        finally:
            code = term.close()
    assert code == 0
