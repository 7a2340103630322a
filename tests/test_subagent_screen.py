"""A subagent as a person sees it, on a real pseudo-terminal read through the emulator (tests/screen.py): its
newest step live under the parent's call, and one line when it ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import agent_command, agent_env
from tests.screen import PtyScreen

pytestmark = pytest.mark.e2e


@pytest.mark.slow
def test_a_childs_running_command_shows_under_the_parents_call_and_its_end_is_one_line(tmp_path: Path) -> None:
    gate = tmp_path / "let-it-finish"  # the child's command runs until the test creates it: no clock decides
    task = {"description": "wait for the gate", "prompt": "run the waiting command", "subagent_type": "general-purpose"}
    script: list[Step] = [
        reply(tool_use("agent__task", task, id="toolu_task")),
        reply(tool_use("dev__bash", {"command": f"until [ -e {gate} ]; do sleep 0.05; done; echo opened"})),
        reply("The gate opened."),
        reply("Done: the subagent saw the gate open."),
    ]
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,agent", "SPROUT_AGENT_SANDBOX": "off"}
    with (
        FakeAnthropic(script) as fake,
        PtyScreen(agent_command([]), agent_env(tmp_path, fake, env), tmp_path, rows=30) as term,
    ):
        term.expect("›")
        term.send("wait for it\r")
        term.expect("general-purpose: dev__bash")  # the child's step, live on the parent call's line
        assert "agent__task" in term.display()
        gate.touch()
        term.expect("Done: the subagent saw the gate open.")
        term.send("/exit\r")
        term.close()
    history = term.history()
    assert "↳ general-purpose: end_turn after 2 requests" in history


@pytest.mark.slow
def test_a_custom_command_is_in_help_completes_and_runs_its_expanded_prompt(tmp_path: Path) -> None:
    commands = tmp_path / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: PATH\n---\nReview $1 closely.\n"
    )
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}
    with (
        FakeAnthropic([reply("Reviewed.")]) as fake,
        PtyScreen(agent_command([]), agent_env(tmp_path, fake, env), tmp_path, rows=30) as term,
    ):
        term.expect("›")
        term.send("/help\r")
        term.expect("/review PATH")
        term.send("/rev")
        term.wait_for(lambda: term.cursor_line().rstrip() == "› /rev", "the typed text on the prompt line")
        term.send("\t")  # Tab completes a project's command as it does ours
        term.wait_for(lambda: term.cursor_line().rstrip() == "› /review", "/review completed on the prompt line")
        term.send(" app.py\r")
        term.expect("Reviewed.")
        term.send("/exit\r")
        term.close()
    assert fake.requests[0].body["messages"][0]["content"][0]["text"].strip() == "Review app.py closely."
    assert "Review a file" in term.history()
