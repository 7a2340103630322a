"""The testing API (sprout_agent/testing.py) and its example: examples/cassettes/check_guard_replay.py run by pytest
as a user runs it, and the same cassette without the guard, which the API shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sprout_agent.testing import run_cassette
from tests.bounds import bounded
from tests.cassette_example import CASSETTE, GUARD_ENV, ROOT, guard_servers

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_example_passes_under_pytest_as_a_user_runs_it(tmp_path: Path) -> None:
    example = ROOT / "examples" / "cassettes" / "check_guard_replay.py"
    command = [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, "--rootdir", str(tmp_path), str(example)], cwd=tmp_path, capture_output=True, text=True,
        timeout=bounded(120),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASSED" in done.stdout and "test_the_guard_keeps_the_key_out_of_env" in done.stdout


def test_without_the_guard_strict_replay_names_the_changed_result_and_lenient_lets_env_be_written(
    tmp_path: Path,
) -> None:
    env = {**GUARD_ENV, "MCP_HOOK_SERVERS": ""}
    strict = run_cassette(CASSETTE, servers=guard_servers(), env=env, workdir=tmp_path / "strict", timeout=bounded(120))
    assert strict.exit_code == 6
    assert strict.result["exit_code"] == 6 and "request 2 differs from the recording" in strict.stderr
    assert "content[0].content[0].text" in strict.stderr and ".env is a protected path" in strict.stderr
    lenient = run_cassette(
        CASSETTE, servers=guard_servers(), env=env, strict=False, workdir=tmp_path / "lenient", timeout=bounded(120)
    )
    assert lenient.exit_code == 0, lenient.stderr
    assert (lenient.workdir / ".env").read_text() == "API_KEY=changeme\n"  # what the guard is there to stop
    assert lenient.of("hook_objected") == []
