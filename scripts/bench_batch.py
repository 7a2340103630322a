"""The `batch` group of scripts/bench: what `sprout-agent batch` adds over bare `-p` runs, and its throughput."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

from scripts.bench_startup import stop_zygotes, warm_env
from tests.fake_anthropic import FakeAnthropic, reply
from tests.harness import agent_command, agent_env


def batch_wall(tasks: int, jobs: int, warm: bool = False) -> float:
    """Seconds for `sprout-agent batch` to run `tasks` one-reply tasks at `jobs` at once (the real CLI per task);
    `warm`: from the warm interpreter, which the batch starts (in a runtime directory of its own) and which is
    stopped afterwards, so each figure includes its start."""
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic([reply("done")] * tasks, auto_usage=True) as fake:
        home = Path(tmp)
        (home / "tasks.jsonl").write_text(
            "".join(json.dumps({"id": f"t{n}", "prompt": "go"}) + "\n" for n in range(tasks))
        )
        argv = agent_command(["batch", "tasks.jsonl", "--out", "out", "--jobs", str(jobs)])
        env = agent_env(home, fake)
        if warm:
            env = warm_env(home, env)
        start = time.monotonic()
        done = subprocess.run(argv, env=env, cwd=home, capture_output=True, timeout=900, check=False)
        wall = time.monotonic() - start
        if warm:
            stop_zygotes({"batch": (argv, env, True, home)})
        if done.returncode != 0:
            raise RuntimeError(f"batch exited {done.returncode}: {done.stderr.decode()[-300:]}")
        return wall


def bare_wall() -> float:
    """Seconds for one bare `sprout-agent -p` run answered at once (the same task without the batch)."""
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic([reply("done")], auto_usage=True) as fake:
        home = Path(tmp)
        start = time.monotonic()
        argv = agent_command(["-p", "go", "--output-format", "stream-json"])
        done = subprocess.run(argv, env=agent_env(home, fake), cwd=home, capture_output=True, timeout=300, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"-p exited {done.returncode}")
        return time.monotonic() - start
