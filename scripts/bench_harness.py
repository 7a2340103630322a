"""The `harness` group of scripts/bench: what a benchmark harness pays per task to install sprout-agent, against the
agent's own run (issue 43; docs/benchmarks.md).

The Harbor adapter (examples/harbor/sprout_harbor.py) installs sprout-agent in each task's fresh container with
`uv tool install --force --compile-bytecode <wheel>`, then runs the instruction. Measured here, on this machine:

- the install: a wheel of this tree (built once, not counted) installed as a uv tool into a fresh tool directory,
  byte-compiled, with uv's cache as this machine has it (uv still asks the package index whether what it holds is
  current: a container with no cache adds the downloads, which are the network's, not ours);
- the run: that tool's `sprout-agent -p … --output-format stream-json` against the fake API, cold (a container's
  first run), with the built-in servers.

Both as wall and as the CPU of the process tree (children's rusage).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.fake_anthropic import FakeAnthropic, reply

ROOT = Path(__file__).resolve().parent.parent
UV = Path(sys.executable).with_name("uv")


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU of the process tree) of one command, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-2000:]
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def harness_figures(runs: int) -> dict[str, list[float]]:
    """install wall/CPU and run wall/CPU, `runs` times each (a fresh tool directory each time)."""
    figures: dict[str, list[float]] = {"install wall": [], "install CPU": [], "run wall": [], "run CPU": []}
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic([reply("Hello.") for _ in range(runs)]) as fake:
        base = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SPROUT_"))}
        _timed([str(UV), "build", "--wheel", "--out-dir", str(base / "dist"), str(ROOT)], env, base)
        (wheel,) = (base / "dist").glob("*.whl")
        for n in range(runs):
            tools, home = base / f"tools{n}", base / f"home{n}"
            home.mkdir()
            install_env = env | {"UV_TOOL_DIR": str(tools), "UV_TOOL_BIN_DIR": str(tools / "bin")}
            install = [str(UV), "tool", "install", "--force", "--compile-bytecode"]
            wall, cpu = _timed([*install, "--python", sys.executable, str(wheel)], install_env, base)
            figures["install wall"].append(wall)
            figures["install CPU"].append(cpu)
            run_env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(home),
                "ANTHROPIC_API_KEY": "sk-ant-bench-0123456789",
                "ANTHROPIC_BASE_URL": fake.base_url,
                "SPROUT_AGENT_WARM": "0",
            }
            argv = [str(tools / "bin" / "sprout-agent"), "-p", "Say hello.", "--output-format", "stream-json"]
            wall, cpu = _timed([*argv, "--verbose"], run_env, home)
            figures["run wall"].append(wall)
            figures["run CPU"].append(cpu)
    return figures
