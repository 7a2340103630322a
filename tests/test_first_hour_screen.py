"""What a person sees on a pseudo-terminal read through pyte, where only a terminal shows it: a resumed session
replayed as it was typed (an `@file` it attached, not the file's lines; a cut call as cancelled) with the status
line's cost going on from the session's recorded total; a retry line and a hook's objection on a narrow screen."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from sprout_agent.core.messages import Message, Text, ToolResult, ToolUse
from sprout_agent.session.store import SessionStore
from tests.fake_anthropic import FakeAnthropic, error, reply
from tests.harness import agent_command, agent_env, fake_server, write_config
from tests.screen import PtyScreen

pytestmark = pytest.mark.e2e

TYPED = 'fix @calc.py\n\n<file path="calc.py">\ndef add(a, b):\n    return a - b\n</file>'


def recorded_session(home: Path, cwd: Path) -> str:
    """A session as a first run left it: a prompt with an attachment, a cancelled call, $0.25 spent."""
    session_id = str(uuid.uuid4())
    directory = home / "data" / "sprout-agent" / "sessions"
    directory.mkdir(parents=True)
    transcript = SessionStore.new(directory, session_id, str(cwd), "claude-sonnet-4-5")
    transcript.appended(Message("user", (Text(TYPED),)))
    transcript.appended(Message("assistant", (ToolUse("t1", "dev__bash", {"command": "sleep 60"}),)))
    cut = ToolResult("t1", (Text("interrupted: the call was cancelled"),), is_error=True)
    transcript.appended(Message("user", (cut,)))
    transcript.spent(0.25)
    transcript.close()
    return session_id


@pytest.mark.slow
def test_a_resumed_session_replays_at_files_and_cancels_and_its_cost_goes_on_from_the_sessions_total(
    tmp_path: Path,
) -> None:
    session_id = recorded_session(tmp_path, tmp_path)
    config = write_config(tmp_path, {})
    usage = {"input_tokens": 10_000, "output_tokens": 1_000}
    with FakeAnthropic([reply("fixed it", usage=usage)]) as fake:
        args = agent_command(["--config", str(config), "--model", "claude-sonnet-4-5", "-r", session_id])
        term = PtyScreen(args, agent_env(tmp_path, fake), tmp_path)
        try:
            term.expect("› fix @calc.py", anywhere=True)
            term.expect("$0.2500", anywhere=True)  # the status line: the session's total, not this run's $0
            replayed = term.history()
            assert "✗ cancelled" in replayed and "def add" not in replayed and "<file" not in replayed
            term.send("and now?\r")
            term.expect("fixed it", anywhere=True)
            term.wait_for(lambda: session_cost(term) > 0.25, "the cost line adding this turn to the session's")
            term.wait_for(lambda: term.cursor_line().rstrip() == "›", "the prompt after the answer")  # then Ctrl-D
            term.send("\x04")
            term.close()
        finally:
            term.close()


def session_cost(term: PtyScreen) -> float:
    """The dollars on the status line (model · context · $cost), 0 while it is not drawn."""
    status = [line for line in term.display().splitlines() if " · context " in line and "$" in line]
    return float(status[-1].rsplit("$", 1)[1].split()[0]) if status else 0.0


@pytest.mark.slow
def test_a_retry_reads_as_the_final_error_and_a_hook_objection_wraps_instead_of_being_cut(tmp_path: Path) -> None:
    reason = "the tests are red: " + " ".join(f"test_case_{n} failed" for n in range(12)) + " END-OF-REASON"
    hook = fake_server(stop_mode="sequence", stop_sequence=[reason])
    config = write_config(tmp_path, {"judge": hook})
    with FakeAnthropic([error(500, retry_after_ms=600), reply("first try"), reply("fixed now")]) as fake:
        env = agent_env(tmp_path, fake, {"MCP_HOOK_SERVERS": "judge"})
        term = PtyScreen(agent_command(["--config", str(config), "go"]), env, tmp_path, columns=60)
        try:
            term.expect("fixed now", anywhere=True)
            term.wait_for(lambda: term.cursor_line().rstrip() == "›", "the prompt after the answer")  # then Ctrl-D
            term.send("\x04")
            term.close()
        finally:
            term.close()
    screen = term.history()
    assert "API error 500 (internal server error); retry 1 in 0.6 s" in screen and "InternalServerError" not in screen
    assert "END-OF-REASON" in screen  # the objection's last word, rows below its first: wrapped, not cut at 60
    assert all(len(line) <= 60 for line in screen.splitlines())
