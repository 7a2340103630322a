"""The README's paste-and-run blocks run as they are written (issue 45, item 5): each fenced shell block marked
`<!-- ci-runs: NAME exit=N -->` is run by bash, its text unchanged, with the installed `sprout-agent` on PATH
and the fake API behind ANTHROPIC_BASE_URL (no real key), and must exit N; NAME picks the fake API's script and
what else the README says of that block. A block that is typed into an interactive session (the First run one)
is not marked: it does not end by itself."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Recorded, Step, reply, tool_use
from tests.harness import ROOT, agent_env

pytestmark = pytest.mark.e2e

MARK = re.compile(r"<!-- ci-runs: ([a-z0-9-]+) exit=(\d+) -->\n```(?:sh|bash|shell)\n(.*?)```", re.DOTALL)
FENCE = re.compile(r"^```(?:sh|bash|shell)$", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    name: str
    exit_code: int
    text: str


@dataclass(frozen=True)
class Scenario:
    """What the fake API answers a block with, and what the README promises besides its exit code."""

    script: list[Step]
    promise: Callable[[list[Recorded], str], None]


def _todo_objection(requests: list[Recorded], stdout: str) -> None:
    # "the agent cannot end its turn while todo items are open: the todo server's `_Stop` hook objects"
    objected = [r for r in requests if "You have open todo items" in str(r.body["messages"][-1])]
    assert len(objected) == 1, [r.body["messages"][-1] for r in requests]
    assert stdout.strip() == "refactored, every step done"


OPEN = [{"content": "split utils.py", "status": "in_progress"}]
DONE = [{"content": "split utils.py", "status": "completed"}]
SCENARIOS: dict[str, Scenario] = {
    "hooks-todo": Scenario(
        [
            reply(tool_use("todo__todo_write", {"todos": OPEN}, id="t1")),
            reply("refactored"),  # an end of turn with an item open: the hook objects
            reply(tool_use("todo__todo_write", {"todos": DONE}, id="t2")),
            reply("refactored, every step done"),
        ],
        _todo_objection,
    ),
}


def marked_blocks() -> list[Block]:
    text = (ROOT / "README.md").read_text()
    return [Block(name, int(code), body) for name, code, body in MARK.findall(text)]


def test_the_readme_marks_blocks_to_run_and_each_has_its_scenario() -> None:
    blocks = marked_blocks()
    assert blocks, "no README block is marked to run in CI"
    assert sorted(block.name for block in blocks) == sorted(SCENARIOS)
    text = (ROOT / "README.md").read_text()
    assert len(FENCE.findall(text)) > len(blocks)  # the unmarked ones are seen and left, not missed by the pattern


@pytest.mark.parametrize("block", marked_blocks(), ids=lambda block: block.name)
@pytest.mark.slow
def test_a_marked_readme_block_runs_as_written_and_exits_as_marked(tmp_path: Path, block: Block) -> None:
    installed = Path(sys.executable).parent / "sprout-agent"  # the console script the install put beside python
    if not installed.exists() or shutil.which("bash") is None:
        pytest.skip("no installed sprout-agent console script beside this python")
    scenario = SCENARIOS[block.name]
    with FakeAnthropic(list(scenario.script)) as fake:
        env = agent_env(tmp_path, fake)
        del env["SPROUT_AGENT_BUILTIN_SERVERS"]  # a new user's: the built-in servers the README speaks of
        del env["PYTHONPATH"]  # the installed command, as a user runs it
        env["PATH"] = f"{installed.parent}:{env['PATH']}"
        ran = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.text],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=bounded(60),
        )
        requests = fake.requests
    assert ran.returncode == block.exit_code, ran.stderr
    scenario.promise(requests, ran.stdout)
