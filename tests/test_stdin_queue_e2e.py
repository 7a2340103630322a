"""The stream-json prompt queue on a real process: a script writes ten 15 MiB prompts while a turn runs, and the
agent's memory stays bounded (the lines wait as bytes, at most 64 MiB of them in memory, the rest on disk), while a
control request written after them is still answered during that turn. Memory is measured from /proc (VmHWM, the
peak), asserted only under a generous bound; the numbers are printed (`-s`) for the record."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, hang
from tests.harness import agent_command, agent_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MIB = 1024 * 1024
PROMPT = 15 * MIB
# main held every line parsed: ten such prompts took the agent to 855 MiB here. Bounded, it stays near its own
# size (120 MiB) plus the 64 MiB the queue may keep in memory plus one line being read and checked: 331 MiB.
PEAK_BOUND = 450 * MIB


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of a process, in bytes."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


def lines_of(stream: IO[bytes]) -> queue.Queue[dict[str, Any]]:
    """The process's stdout lines, parsed, as a reader thread gets them."""
    found: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        for raw in stream:
            found.put(json.loads(raw))

    threading.Thread(target=read, daemon=True).start()
    return found


def expect(found: queue.Queue[dict[str, Any]], wanted: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + bounded(timeout)
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = found.get(timeout=left)
        except queue.Empty:
            break
        if wanted in json.dumps(line):
            return line
    raise AssertionError(f"no line with {wanted!r} in time")


def user(text: str) -> bytes:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}}).encode() + b"\n"


def test_ten_15_mib_prompts_written_during_a_turn_keep_the_agents_memory_bounded(tmp_path: Path) -> None:
    fake = FakeAnthropic([hang(mid_stream=True)])  # the first turn waits for the model for as long as the test runs
    args = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
    with fake:
        agent = subprocess.Popen(
            agent_command(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=agent_env(tmp_path, fake),
            cwd=tmp_path,
        )
        assert agent.stdin is not None and agent.stdout is not None
        try:
            found = lines_of(agent.stdout)
            agent.stdin.write(user("first"))
            agent.stdin.flush()
            expect(found, '"subtype": "init"')
            deadline = time.monotonic() + bounded(30)
            while not fake.requests:  # bounded polling: a hanging request writes no line
                assert time.monotonic() < deadline, "the first request never came"
                time.sleep(0.05)
            before = memory(agent.pid)
            for number in range(10):
                agent.stdin.write(
                    user(f"prompt {number} " + "x" * PROMPT + "\U0001f331")
                )  # one sprout: 4 bytes a character once parsed
            status = {"type": "control_request", "request_id": "after_ten", "request": {"subtype": "mcp_status"}}
            agent.stdin.write(json.dumps(status).encode() + b"\n")
            agent.stdin.flush()
            answered = expect(found, '"request_id": "after_ten"')  # read past 150 MiB of waiting prompts
            after = memory(agent.pid)
            assert len(fake.requests) == 1  # still the first turn: every prompt is waiting
        finally:
            agent.kill()
            agent.wait(timeout=bounded(30))
    assert answered["response"]["subtype"] == "success"
    rss, peak = before["VmRSS"] // MIB, after["VmHWM"] // MIB
    print(f"\nagent memory: VmRSS {rss} MiB before the prompts, peak (VmHWM) {peak} MiB")
    assert after["VmHWM"] < PEAK_BOUND
