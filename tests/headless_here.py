"""The headless face (`-p`, json, stream-json) run in the test's own process: prepare, then `run_headless`.

What a process start costs (~3 s of imports each) buys nothing for rules that live in prepare, the store and the
sinks (resume, --continue, the result's session id); the tests that need a process (signals, the CLI's own
parsing and exit path) keep using tests/harness.py's `run_agent`. `in_process` servers (tests/inproc_fake.py) join
the configured ones as the built-in servers do, so a run with tools and hooks starts no process either.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.files import ServerConfig
from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.session.prepared import prepare
from tests.fake_anthropic import FakeAnthropic
from tests.harness import Run, agent_env, write_config


def headless(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: Options,
    *,
    fake: FakeAnthropic | None,
    servers: dict[str, dict[str, Any]] | None = None,
    env: dict[str, str] | None = None,
    stdin: str = "",
    in_process: Sequence[ServerConfig] = (),
) -> Run:
    """Like `run_agent(tmp_path, ...)`: the same isolated environment and user directories under tmp_path."""
    from sprout_agent.faces.headless.run import run_headless  # the face reads stdin through the mcp SDK's types

    environ = agent_env(tmp_path, fake, env)
    for name, value in environ.items():  # Locations.for_user reads the XDG variables, as in the CLI
        monkeypatch.setenv(name, value)
    if servers is not None:
        options = replace(options, config_files=(write_config(tmp_path, servers),))
    prepared = prepare(options, Locations.for_user(), environ)
    if in_process:
        prepared = replace(prepared, loaded=replace(prepared.loaded, servers=(*prepared.loaded.servers, *in_process)))
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_headless(prepared)
    return Run(code, out.getvalue(), err.getvalue())
