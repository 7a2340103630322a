"""The interactive session on a real pseudo-terminal: prompt, streamed answer, slash commands, Ctrl-C, exit."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from tests.fake_anthropic import FakeAnthropic, Step, hang, reply, tool_use
from tests.harness import agent_command, agent_env, fake_server, tool_results, write_config

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """The CLI on a pty; `expect` reads (bounded) until a text appears in the screen output."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm"}, cwd=cwd, start_new_session=True
        )
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while text not in ANSI.sub("", self.seen):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"never saw {text!r}; screen:\n{ANSI.sub('', self.seen)[-2000:]}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    break
        assert text in ANSI.sub("", self.seen), f"never saw {text!r}"

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    break
        if self.process.poll() is None:
            self.process.kill()
        os.close(self.master)
        return self.process.wait(timeout=5)


def test_repl_answers_lists_tools_and_exits(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fake": fake_server()})
    script: list[Step] = [reply(tool_use("fake__echo", {"text": "hey"})), reply("Hello **there**")]
    with FakeAnthropic(script) as fake:
        term = Terminal(agent_command(["--config", str(config)]), agent_env(tmp_path, fake), tmp_path)
        try:
            term.expect("›")
            term.send("/tools\r")
            term.expect("fake__echo")
            term.send("say hello\r")
            term.expect("Hello there")  # rendered as Markdown: no asterisks
            term.expect("fake__echo text=hey ok")
            term.send("/servers\r")
            term.expect("running")
            term.send("/exit\r")
        finally:
            code = term.close()
    assert code == 0
    assert len(fake.requests) == 2


def test_ctrl_c_cancels_the_turn_and_the_next_prompt_has_a_valid_history(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fake": fake_server()})
    script: list[Step] = [reply(tool_use("fake__slow", {"seconds": 30}, id="toolu_slow")), reply("second answer")]
    with FakeAnthropic(script) as fake:
        term = Terminal(agent_command(["--config", str(config)]), agent_env(tmp_path, fake), tmp_path)
        try:
            term.expect("›")
            term.send("start something slow\r")
            deadline = time.monotonic() + 30
            while len(fake.requests) < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)  # let the slow tool call start; the cancel below is what is tested
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


def test_ctrl_c_while_waiting_on_the_model(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    with FakeAnthropic([hang(), reply("after")]) as fake:
        term = Terminal(agent_command(["--config", str(config)]), agent_env(tmp_path, fake), tmp_path)
        try:
            term.expect("›")
            term.send("hang please\r")
            deadline = time.monotonic() + 30
            while not fake.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            os.killpg(term.process.pid, signal.SIGINT)
            term.expect("cancelled")
            term.send("again\r")
            term.expect("after")
            term.send("/exit\r")
        finally:
            code = term.close()
    assert code == 0
