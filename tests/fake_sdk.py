"""A scripted stand-in for a Claude Agent SDK, in the test's own process: it writes control and user lines to the
headless session's stdin (a real pipe) and reads its stdout lines as they are written.

The session runs in the main thread (`run_headless` listens for signals there); the script runs in a thread and
every wait in it is bounded (`expect`'s timeout). The script's failure is raised in the test after the session
ended; stdin is closed whatever the script does, so the session always ends.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.session.prepared import prepare
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic
from tests.harness import agent_env, write_config
from tests.stream_schema import valid_lines

Json = dict[str, Any]


class _Stdout(io.TextIOBase):
    """The session's stdout: each whole line is kept raw and handed, parsed, to the script."""

    def __init__(self) -> None:
        self.lines: queue.Queue[Json] = queue.Queue()
        self.raw: list[str] = []
        self._partial = ""

    def write(self, text: str) -> int:
        self._partial += text
        *whole, self._partial = self._partial.split("\n")
        for line in whole:
            self.raw.append(line)
            self.lines.put(json.loads(line))
        return len(text)


class FakeSdk:
    def __init__(self) -> None:
        self.out = _Stdout()
        read, write = os.pipe()
        self.stdin = io.TextIOWrapper(os.fdopen(read, "rb"))
        self._writer = os.fdopen(write, "wb")
        self.seen: list[Json] = []

    def send(self, record: Json) -> None:
        self._writer.write(json.dumps(record).encode() + b"\n")
        self._writer.flush()

    def send_raw(self, data: bytes) -> None:
        self._writer.write(data)
        self._writer.flush()

    def user(self, text: str) -> None:
        self.send({"type": "user", "message": {"role": "user", "content": text}})

    def control(self, request_id: str, subtype: str, **fields: Any) -> Json:
        """Sends a control request and returns its control_response's `response`."""
        self.send({"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **fields}})
        line = self.expect(lambda r: r.get("type") == "control_response" and r["response"]["request_id"] == request_id)
        return line["response"]

    def answer(self, request: Json, response: Json) -> None:
        body = {"subtype": "success", "request_id": request["request_id"], "response": response}
        self.send({"type": "control_response", "response": body})

    def expect(self, match: Callable[[Json], bool], timeout: float = 30) -> Json:
        """The next stdout line `match` accepts (bounded: `timeout`, scaled); the lines before it are kept in `seen`."""
        limit = bounded(timeout)
        deadline = time.monotonic() + limit
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching line within {limit:.3g} s; seen: {self.seen[-5:]}")
            try:
                record = self.out.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(record)
            if match(record):
                return record

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._writer.close()


def mentions(text: str) -> Callable[[Json], bool]:
    """Matches any line whose JSON holds `text` (line shapes may change; the content does not)."""
    return lambda record: text in json.dumps(record)


def run_with_sdk(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    script: Callable[[FakeSdk], None],
    *,
    fake: FakeAnthropic,
    options: Options | None = None,
    servers: dict[str, Json] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int, FakeSdk, str]:
    """Runs a stream-json session driven by `script`; (exit code, the fake SDK, stderr)."""
    from sprout_agent.faces.headless.run import run_headless  # the face reads stdin through the mcp SDK's types

    environ = agent_env(tmp_path, fake, env)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    base = Options(prompt=None, output_format="stream-json", input_format="stream-json", cwd=work.resolve())
    options = replace(options or base, output_format="stream-json", input_format="stream-json", cwd=work.resolve())
    if servers is not None:
        options = replace(options, config_files=(write_config(tmp_path, servers),))
    prepared = prepare(options, Locations.for_user(), environ)
    sdk = FakeSdk()
    failures: list[BaseException] = []

    def play() -> None:
        try:
            script(sdk)
        except BaseException as error:
            failures.append(error)
        finally:
            sdk.close()

    player = threading.Thread(target=play, daemon=True)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdin", sdk.stdin)
    player.start()
    with contextlib.redirect_stdout(sdk.out), contextlib.redirect_stderr(err):  # type: ignore[type-var]
        code = run_headless(prepared)
    player.join(timeout=bounded(30))
    if failures:
        raise failures[0]
    valid_lines("\n".join(sdk.out.raw))  # control lines included: every stdout line is in the schema
    return code, sdk, err.getvalue()
