"""The Python that has the `harbor` package (>= 3.12, a virtualenv of its own: .ci/run makes .ci/harbor-venv, or
SPROUT_TEST_HARBOR_PYTHON names one), and tests/harbor_drive.py run by it as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.bounds import bounded

ROOT = Path(__file__).resolve().parent.parent
DRIVE = ROOT / "tests" / "harbor_drive.py"


def harbor_python(*, own_step: bool = True) -> str:
    """The harbor virtualenv's Python; the test is skipped, saying how to make one, when there is none. `own_step`:
    a test that drives Harbor's agent classes (tens of seconds each) runs in a CI step of its own, with
    SPROUT_TEST_HARBOR=1 (.ci/run), not in the README's test command, which must stay under its 150 s."""
    if own_step and os.environ.get("SPROUT_TEST_HARBOR") != "1":
        pytest.skip("Harbor's agent classes run in their own step: SPROUT_TEST_HARBOR=1 (.ci/run does so)")
    named = os.environ.get("SPROUT_TEST_HARBOR_PYTHON") or str(ROOT / ".ci" / "harbor-venv" / "bin" / "python")
    if not Path(named).exists():
        pytest.skip(
            f"no harbor virtualenv at {named}: python3.12 -m venv .ci/harbor-venv && .ci/harbor-venv/bin/pip install"
            " harbor (.ci/run does this), or set SPROUT_TEST_HARBOR_PYTHON"
        )
    return named


def drive(what: str, argument: Path, env: dict[str, str], timeout: float = 120) -> dict[str, Any]:
    """`harbor_drive.py WHAT ARGUMENT` under the harbor Python, its one JSON line parsed; fails with its stderr."""
    done = subprocess.run(
        [harbor_python(), str(DRIVE), what, str(argument)],
        capture_output=True,
        text=True,
        env=env,
        timeout=bounded(timeout),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
