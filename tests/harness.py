"""Shared test helpers: the real `sprout-agent` CLI as a subprocess against the fake API and fake MCP servers,
process checks (alive, pids from a pidfile), bounded polling, and tool calls through an MCP client.

Every `timeout` here is the bound on an idle machine: the helpers scale it by the load factor (tests/bounds.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic

if TYPE_CHECKING:
    from mcp import Client

ROOT = Path(__file__).resolve().parent.parent
FAKE_MCP = str(ROOT / "tests" / "fake_mcp_server.py")
API_KEY = "sk-ant-test-secret-key-0123456789"


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def fake_server(**knobs: Any) -> dict[str, Any]:
    """A config entry for the fault-knob MCP server; knobs become FAKE_MCP_* variables."""
    env = {f"FAKE_MCP_{key.upper()}": v if isinstance(v, str) else json.dumps(v) for key, v in knobs.items()}
    return {"command": sys.executable, "args": [FAKE_MCP], "env": env}


def agent_env(home: Path, fake: FakeAnthropic | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment: isolated config and data dirs, the fake API, built-in servers off."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "ANTHROPIC_API_KEY": API_KEY,
        "SPROUT_AGENT_BUILTIN_SERVERS": "none",
        "PYTHONPATH": str(ROOT),
        "SPROUT_AGENT_WARM": "0",  # each run in its own process; tests/test_warm.py runs them warm
    }
    if warm_dir := os.environ.get("SPROUT_TEST_WARM_DIR"):  # the whole suite through the warm interpreter
        env |= {"SPROUT_AGENT_WARM": "1", "XDG_RUNTIME_DIR": warm_dir}
    if fake is not None:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
    env.update(extra or {})
    return env


def write_config(directory: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path = directory / "mcp-config.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def agent_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "sprout_agent", *args]


def run_agent(
    tmp_path: Path,
    args: list[str],
    *,
    fake: FakeAnthropic | None,
    servers: dict[str, dict[str, Any]] | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 60,
) -> Run:
    """Runs the CLI to completion (bounded: `timeout`, scaled) and returns its exit code and output."""
    config_args = ["--config", str(write_config(tmp_path, servers))] if servers is not None else []
    completed = subprocess.run(
        agent_command([*config_args, *args]),
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=agent_env(tmp_path, fake, env),
        cwd=tmp_path,
        timeout=bounded(timeout),
    )
    return Run(completed.returncode, completed.stdout, completed.stderr)


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (PID 1 here may be slow to reap orphans, or never)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def warm_zygotes(runtime: Path) -> list[int]:
    """The live warm interpreters serving the runtime directory `runtime` (XDG_RUNTIME_DIR of the runs that
    started them): the pids their locks name, each a live process of ours called a warm interpreter
    (faces/warm/live.py; their command line is their title now, which names no directory)."""
    from sprout_agent.faces.warm import live

    try:
        return [one.pid for one in live.interpreters(runtime / "sprout-agent") if pid_alive(one.pid)]
    except OSError:
        return []


def end_warm_zygotes(runtime: Path) -> None:
    """Asks the warm interpreters serving `runtime` to leave (each does once its runs have ended)."""
    for pid in warm_zygotes(runtime):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def pids_in(pidfile: Path) -> list[int]:
    """The pids the fake MCP server wrote (grandchild_pidfile knob), one per line."""
    return [int(line) for line in pidfile.read_text().split()] if pidfile.exists() else []


async def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Polls (bounded: `timeout`, scaled) until `condition` holds; fails saying `what` never happened."""
    limit = bounded(timeout)
    deadline = anyio.current_time() + limit
    while not condition():
        assert anyio.current_time() < deadline, f"{what} did not happen within {limit:.3g} s"
        await anyio.sleep(0.01)


async def wait_dead(*pids: int, timeout: float = 30) -> None:
    """Until every pid has exited (a zombie counts as exited)."""
    await wait_until(lambda: not any(pid_alive(pid) for pid in pids), f"the end of {pids}", timeout)


async def read_pid(path: Path) -> int:
    """The pid a command writes to `path`, once it is there (bounded)."""
    await wait_until(lambda: path.exists() and bool(path.read_text().strip()), f"a pid in {path.name}")
    return int(path.read_text())


def kill_pid(pid: int) -> None:
    """SIGKILL, for cleaning up after a test; a process already gone is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def call_tool(client: Client, name: str, **args: object) -> tuple[bool, str]:
    """(is_error, text) of one tool call through an MCP client, bounded by 60 s (scaled by tests/bounds.py)."""
    with anyio.fail_after(bounded(60)):
        result = await client.call_tool(name, args)
    text = "".join(getattr(block, "text", "") for block in result.content if block.type == "text")
    return bool(result.is_error), text


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tool_names(request_body: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in request_body.get("tools", [])]


def tool_results(request_body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool_result block in the request, in order."""
    return [
        block
        for message in request_body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def result_text(block: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in block["content"])


def assert_history_valid(request_body: dict[str, Any]) -> None:
    """Every tool_use is answered in the next message, roles alternate, no empty text or turn."""
    messages = request_body["messages"]
    assert messages[0]["role"] == "user"
    for index, message in enumerate(messages):
        assert message["content"], f"empty turn at {index}"
        if index:
            assert message["role"] != messages[index - 1]["role"], f"same role twice at {index}"
        for block in message["content"]:
            if block["type"] == "text":
                assert block["text"].strip(), f"empty text block at {index}"
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if uses:
            following = messages[index + 1]["content"] if index + 1 < len(messages) else []
            answered = [b["tool_use_id"] for b in following if b["type"] == "tool_result"]
            assert answered == uses, f"tool_use {uses} answered by {answered}"


def start_agent(
    tmp_path: Path, args: list[str], *, fake: FakeAnthropic, env: dict[str, str] | None = None, **popen: Any
) -> subprocess.Popen[Any]:
    """The CLI running in the background (stdin closed, output piped unless given), for signal tests."""
    options: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    options.update(popen)
    return subprocess.Popen(agent_command(args), env=agent_env(tmp_path, fake, env), cwd=tmp_path, **options)


def wait_for(condition: Callable[[], bool], what: str, process: subprocess.Popen[Any], timeout: float = 60) -> None:
    """Polls (bounded: `timeout`, scaled) until `condition` holds; fails saying `what` never happened or the agent
    exited."""
    limit = bounded(timeout)
    deadline = time.monotonic() + limit
    while not condition():
        assert process.poll() is None, f"the agent exited ({process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"{what} did not happen within {limit:.3g} s"
        time.sleep(0.05)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """The CLI on a pty; `expect` reads (bounded) until a text appears in the screen output.

    Like a real terminal it answers the cursor-position queries prompt_toolkit sends (ESC [ 6 n): unanswered,
    each one held the agent about a second before it gave up on them (tests/screen.py's emulator answers them
    with the real position; here the top row is as good an answer, as nothing is drawn from it)."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm"}, cwd=cwd, start_new_session=True
        )
        os.close(slave)
        self.seen = ""
        self._answered = 0  # cursor-position queries answered so far

    def screen(self) -> str:
        return ANSI.sub("", self.seen)

    def expect(self, text: str, timeout: float = 30) -> None:
        self.wait_until(lambda: text in self.screen(), f"the text {text!r}", timeout)

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
        """Reads the screen (bounded: `timeout`, scaled) until `condition` holds, so the agent never blocks on a
        full pty."""
        limit = bounded(timeout)
        deadline = time.monotonic() + limit
        while not condition():
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{what} did not happen within {limit:.3g} s; screen:\n{self.screen()[-2000:]}"
            if not self._read(min(remaining, 0.05)):
                assert condition(), f"the terminal closed before {what}; screen:\n{self.screen()[-2000:]}"

    def _read(self, timeout: float) -> bool:
        """Whatever arrives within `timeout`; False once the pty is closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                self.seen += os.read(self.master, 65536).decode(errors="replace")
            except OSError:
                return False
            asked = self.seen.count("\x1b[6n")
            for _ in range(asked - self._answered):
                os.write(self.master, b"\x1b[1;1R")
            self._answered = asked
        return True

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self, timeout: float = 20) -> int:
        """Reads until the agent exits (bounded: `timeout` scaled); kills it if it does not."""
        deadline = time.monotonic() + bounded(timeout)
        while self.process.poll() is None and time.monotonic() < deadline and self._read(0.1):
            pass
        if self.process.poll() is None:
            self.process.kill()
        os.close(self.master)
        return self.process.wait(timeout=bounded(5))
