"""No silent wait, as a person sees it on a pseudo-terminal read through pyte (issue 45, item 3): while the API
holds a request, the interactive session shows a "waiting for the API" line at each quiet spell and a `-p` run
one line on stderr. The fake API holds the reply (its `delay`); the notice comes after
SPROUT_AGENT_API_WAITING_MS, which the tests lower from its 15 s (a documented setting, at most 15 s)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, reply
from tests.harness import agent_command, agent_env, write_config
from tests.screen import PtyScreen

pytestmark = pytest.mark.e2e

QUIET = {"SPROUT_AGENT_API_WAITING_MS": "1000"}
HELD = 3.5  # seconds the fake API holds the reply: the notices at 1 s and 2 s come well before it (and 3 s too)


def waiting_lines(screen: str) -> list[str]:
    return re.findall(r"waiting for the API: \d+ s", screen)


@pytest.mark.slow
def test_the_interactive_session_says_it_is_waiting_for_the_api_while_a_request_is_held(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    with FakeAnthropic([reply("the answer at last", delay=HELD)]) as fake:
        term = PtyScreen(agent_command(["--config", str(config), "hello"]), agent_env(tmp_path, fake, QUIET), tmp_path)
        try:
            term.expect("waiting for the API: 1 s", anywhere=True)
            term.expect("waiting for the API: 2 s", anywhere=True)  # and on, while the request stays quiet
            term.expect("the answer at last", anywhere=True)
            assert waiting_lines(term.history())[:2] == ["waiting for the API: 1 s", "waiting for the API: 2 s"]
            term.wait_for(lambda: term.cursor_line().rstrip() == "›", "the prompt after the answer")
            term.send("\x04")  # Ctrl-D leaves
            assert term.close() == 0
        finally:
            term.close()


def test_a_print_run_on_a_terminal_writes_one_waiting_line_for_a_quiet_spell(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    with FakeAnthropic([reply("the answer at last", delay=HELD)]) as fake:
        args = agent_command(["--config", str(config), "-p", "hello"])
        term = PtyScreen(args, agent_env(tmp_path, fake, QUIET), tmp_path)
        try:
            term.expect("waiting for the API: 1 s", anywhere=True)
            term.expect("the answer at last", anywhere=True)
            assert term.close() == 0
        finally:
            term.close()
    # A script's stderr gets one line a quiet spell, not one a second: the 2 s and 3 s notices were not printed.
    assert waiting_lines(term.history()) == ["waiting for the API: 1 s"]
