"""The interactive session as a person sees it, on a real pseudo-terminal read through pyte: the positional
prompt, `@file` completion, a notice printed above a redrawn prompt that keeps what was typed, Esc cancelling,
Ctrl-C twice leaving with the command to resume."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, hang, reply, tool_use
from tests.harness import agent_command, agent_env, fake_server, write_config
from tests.screen import PtyScreen

pytestmark = pytest.mark.e2e


def prompt_shows(term: PtyScreen, typed: str = "") -> bool:
    return term.cursor_line() == f"› {typed}".rstrip() or term.cursor_line() == f"› {typed}"


@pytest.mark.slow
def test_the_positional_prompt_runs_at_once_esc_cancels_it_and_ctrl_c_twice_leaves_naming_the_session(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {})
    with FakeAnthropic([hang(), reply("after")]) as fake:
        term = PtyScreen(agent_command(["--config", str(config), "wait forever"]), agent_env(tmp_path, fake), tmp_path)
        try:
            term.wait_for(lambda: bool(fake.requests), "the positional prompt reaching the model")
            term.expect("thinking", anywhere=True)
            term.send("\x1b")
            term.expect("cancelled", anywhere=True)
            term.wait_for(lambda: prompt_shows(term), "the prompt after the cancel")
            term.send("again\r")
            term.expect("after", anywhere=True)
            term.wait_for(lambda: prompt_shows(term), "the prompt after the answer")
            term.send("\x03")
            term.expect("press Ctrl-C again to leave", anywhere=True)
            term.send("\x03")
            code = term.close()
        finally:
            term.close()
    assert code == 0
    assert fake.requests[0].body["messages"][0]["content"][0]["text"] == "wait forever"
    assert len(fake.requests) == 2
    assert re.search(r"resume this session: sprout-agent -r [0-9a-f-]{36}\n", term.history())


@pytest.mark.slow
def test_a_notice_while_typing_goes_above_the_prompt_which_keeps_the_text_and_tab_completes_an_at_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    config = write_config(tmp_path, {"broken": {"command": str(tmp_path / "no-such-server")}})
    with FakeAnthropic([reply("fixed")]) as fake:
        term = PtyScreen(agent_command(["--config", str(config)]), agent_env(tmp_path, fake), tmp_path)
        try:
            term.wait_for(lambda: prompt_shows(term), "the prompt")
            term.send("fix @cal")  # typed while the servers start; their failure is printed meanwhile
            term.expect("server broken failed", anywhere=True)
            term.wait_for(lambda: prompt_shows(term, "fix @cal"), "the prompt redrawn with the typed text")
            failure = next(i for i, line in enumerate(term.display().splitlines()) if "server broken failed" in line)
            assert failure < term.screen.cursor.y  # above the prompt, not over it
            term.send("\t")
            term.wait_for(lambda: prompt_shows(term, "fix @calc.py"), "@calc.py completed on the prompt line")
            term.send("\r")
            term.expect("fixed", anywhere=True)
            term.wait_for(lambda: prompt_shows(term), "the prompt after the answer")
            term.send("\x04")
            code = term.close()
        finally:
            term.close()
    assert code == 0
    sent = fake.requests[0].body["messages"][-1]["content"][0]["text"]
    assert sent == 'fix @calc.py\n\n<file path="calc.py">\ndef add(a, b):\n    return a - b\n</file>'


@pytest.mark.slow
def test_after_esc_the_cancelled_call_stays_named_with_the_time_it_ran(tmp_path: Path) -> None:
    gate = tmp_path / "never"  # never created: the call runs until Esc
    config = write_config(tmp_path, {"fake": fake_server(slow_gate=str(gate))})
    with FakeAnthropic([reply(tool_use("fake__slow", {"seconds": 60}, id="s")), reply("after")]) as fake:
        term = PtyScreen(agent_command(["--config", str(config), "go"]), agent_env(tmp_path, fake), tmp_path)
        try:
            term.expect("fake__slow", anywhere=True)
            term.send("\x1b")
            term.expect("cancelled after", anywhere=True)
            term.wait_for(lambda: prompt_shows(term), "the prompt after the cancel")
            term.send("\x04")
            term.close()
        finally:
            term.close()
    assert re.search(r"✗ fake__slow seconds=60 cancelled after \d+\.\d s", term.history())


@pytest.mark.slow
def test_the_ask_question_shows_the_command_and_a_failed_commands_preview_its_own_lines(tmp_path: Path) -> None:
    command = "echo first line; echo the failing line; exit 3"
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}
    with FakeAnthropic([reply(tool_use("dev__bash", {"command": command}, id="b")), reply("it failed")]) as fake:
        args = agent_command(["--permission-mode", "ask", "run it"])
        term = PtyScreen(args, agent_env(tmp_path, fake, env), tmp_path)
        try:
            term.expect("Run dev__bash?", anywhere=True)
            question = term.display()
            assert f"$ {command}" in question and '"command"' not in question  # the command, as it would run
            term.send("y")
            term.expect("it failed", anywhere=True)
            term.wait_for(lambda: prompt_shows(term), "the prompt after the answer")
            term.send("\x04")
            term.close()
        finally:
            term.close()
    screen = term.history()
    assert re.search(r"✗ dev__bash command=.* · exit 3", screen)
    assert "the failing line" in screen and "[exit code" not in screen  # the command's lines, not the model's notes
