"""The `caps` group of scripts/bench: the agent's peak memory when others send too much at once.

A `-p` run whose remote (Streamable HTTP) server answers one call with a huge body (tests/raw_http_server.py, a
process), and a stream-json run whose stdin carries one huge user line before a normal one. Peak RSS comes
from wait4, for the agent's process (its servers included).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import agent_command, agent_env, write_config

ROOT = Path(__file__).resolve().parent.parent
_PIECE = 1 << 20


def _peak(argv: list[str], env: dict[str, str], cwd: Path, feed: Any = None) -> tuple[int, float, str]:
    """Runs argv to exit (bounded); (exit code, peak RSS in MB, stderr). `feed(stdin)` writes its input."""
    with tempfile.TemporaryFile() as err:
        stdin = subprocess.PIPE if feed is not None else subprocess.DEVNULL
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
        writer = threading.Thread(target=feed, args=(proc.stdin,), daemon=True) if feed is not None else None
        if writer is not None:
            writer.start()
        watchdog = threading.Timer(300, proc.kill)
        watchdog.start()
        _, status, usage = os.wait4(proc.pid, 0)
        watchdog.cancel()
        err.seek(0)
        return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, err.read().decode(errors="replace")


def _listening(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:  # bounded: the server is stdlib only and listens at once
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the raw HTTP server did not listen") from None
            time.sleep(0.05)


def remote_reply(size: int, **shape: object) -> tuple[float, str]:
    """Peak RSS (MB) of a -p run whose remote server answers one call with `size` bytes; what the model got."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "tests.raw_http_server", str(port)], cwd=ROOT)
    try:
        _listening(port, server)
        script = [reply(tool_use("remote__huge", {"bytes": size, **shape})), reply("done")]
        with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(script, auto_usage=True) as fake:
            home = Path(tmp)
            servers = {"remote": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}
            argv = agent_command(["--config", str(write_config(home, servers)), "-p", "go"])
            code, peak, stderr = _peak(argv, agent_env(home, fake), home)
            if code != 0:
                raise RuntimeError(f"exit {code}: {stderr[-300:]}")
            results = [
                b for m in fake.requests[-1].body["messages"] for b in m["content"] if b["type"] == "tool_result"
            ]
            seen = json.dumps(results[-1]["content"])[:120] if results else "no tool result"
            return peak, seen
    finally:
        server.terminate()
        server.wait(timeout=10)


def stdin_line(size: int) -> tuple[float, int, str]:
    """Peak RSS (MB) of a stream-json run whose first stdin line is a `size`-byte user message; exit code; stderr."""
    prefix = b'{"type": "user", "message": {"role": "user", "content": "'

    def feed(stdin: Any) -> None:
        try:
            stdin.write(prefix)
            for left in range(size, 0, -_PIECE):
                stdin.write(b"x" * min(left, _PIECE))
            stdin.write(b'"}}\n' + json.dumps({"type": "user", "text": "and now?"}).encode() + b"\n")
            stdin.close()
        except OSError:
            pass  # the agent stopped reading: its exit code says why

    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic([reply("ok"), reply("ok")], auto_usage=True) as fake:
        home = Path(tmp)
        argv = agent_command(["--input-format", "stream-json", "--output-format", "stream-json"])
        code, peak, stderr = _peak(argv, agent_env(home, fake), home, feed)
        return peak, code, stderr.strip()[-200:]
