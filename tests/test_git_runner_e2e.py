"""The attack the one git runner was built against, on the real CLI: a repository with a sparse index missing a
tree and a promisor remote whose `uploadpack` is a command runs nothing at a `-p` run's first checkpoint, with
the sandbox required (the checkpoint's git runs in the agent's own process, outside it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout_agent.trust import sandbox as _sandbox
from tests.checkpoint_kit import DEV, make_repo
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.git_plants import FILES, programs, promisor
from tests.harness import run_agent

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}"),
]


def test_a_cloned_repositorys_promisor_remote_runs_nothing_at_the_first_checkpoint_of_a_run(tmp_path: Path) -> None:
    marker = tmp_path / "RAN"
    repo = make_repo(tmp_path / "repo", FILES)
    control = promisor(repo, *programs(tmp_path, marker))
    steps = [reply(tool_use("dev__bash", {"command": "echo new > new.txt"})), reply("done")]
    with FakeAnthropic(steps) as fake:
        run = run_agent(tmp_path, ["-p", "go", "--cwd", str(repo), "--sandbox", "required"], fake=fake, env=DEV)
    assert run.code == 0, run.stderr
    assert (repo / "new.txt").read_text() == "new\n"  # the turn ran, checkpoints and all
    assert not marker.exists(), marker.read_text()
    control()
    assert marker.exists(), "plain git runs the remote's uploadpack: the run would have"
