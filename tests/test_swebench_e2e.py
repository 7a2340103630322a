"""`sprout-agent batch --swebench` as a process: the real CLI against the fake API, the built-in dev tools editing
an instance's repository at its base_commit, and predictions whose patch `git apply`s there; and the `swebench`
package's own loader (in .ci/swebench-venv, its own virtualenv: it is large) reading both prediction files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.batch.runner import BatchOptions, run_batch
from sprout_agent.batch.swebench import Swebench
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import ROOT, agent_command, agent_env, read_log
from tests.test_swebench import git, instances_file, instant, row

pytestmark = pytest.mark.e2e
SWEBENCH_PYTHON = os.environ.get("SPROUT_TEST_SWEBENCH_PYTHON") or str(
    ROOT / ".ci" / "swebench-venv" / "bin" / "python"
)
BUGGY = "def add(a, b):\n    return a - b\n"


def instance_repo(path: Path) -> str:
    """`owner__name` as --swebench-repos holds it: the base commit, then a later one (HEAD is not the base)."""
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    (path / "calc.py").write_text(BUGGY)
    git("add", "-A", cwd=path)
    git("commit", "-qm", "base", cwd=path)
    base = git("rev-parse", "HEAD", cwd=path)
    (path / "NEWS").write_text("later\n")
    git("add", "-A", cwd=path)
    git("commit", "-qm", "later", cwd=path)
    return base


def test_a_swebench_batch_writes_predictions_whose_patch_applies_at_base_commit(tmp_path: Path) -> None:
    base = instance_repo(tmp_path / "repos" / "acme__calc")
    instances_file(tmp_path, row("acme__calc-1", base_commit=base, problem_statement="add() subtracts"))
    script = [
        reply(tool_use("dev__read", {"file_path": "calc.py"}, id="t_read")),
        reply(
            tool_use("dev__edit", {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}, id="t_fix"),
            tool_use("dev__write", {"file_path": "tests/test_calc.py", "content": "def test(): pass\n"}, id="t_test"),
        ),
        reply("fixed"),
    ]
    with FakeAnthropic(script) as fake:
        run = subprocess.run(
            agent_command(["batch", "instances.jsonl", "--swebench", "--swebench-repos", "repos", "--exclude-tests",
                           "--out", "out", "--model", "claude-sonnet-4-5", "--output-format", "json"]),
            capture_output=True, text=True, cwd=tmp_path, timeout=bounded(120),
            env=agent_env(tmp_path, fake, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}),
        )  # fmt: skip
        prompt = json.dumps(fake.requests[0].body["messages"][0])
    assert run.returncode == 0, run.stderr
    assert "add() subtracts" in prompt and "acme/calc" in prompt
    (record,) = read_log(tmp_path / "out" / "results.jsonl")
    assert record["status"] == "ok" and (Path(record["cwd"]) / "tests" / "test_calc.py").exists()
    (prediction,) = read_log(tmp_path / "out" / "predictions.jsonl")
    patch: str = prediction["model_patch"]
    assert prediction["instance_id"] == "acme__calc-1"
    assert prediction["model_name_or_path"] == "sprout-agent__claude-sonnet-4-5"
    assert "+    return a + b" in patch and "test_calc" not in patch  # --exclude-tests: the agent's test is not in it
    assert json.loads((tmp_path / "out" / "preds.json").read_text()) == {"acme__calc-1": prediction}
    check = tmp_path / "check"
    git("worktree", "add", "-q", "--detach", str(check), base, cwd=tmp_path / "repos" / "acme__calc")
    applied = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=check, timeout=bounded(30))
    assert applied.returncode == 0
    assert (check / "calc.py").read_text() == BUGGY.replace("a - b", "a + b")


LOADER = """
import json, sys
from swebench.harness.utils import get_predictions_from_file
from swebench.harness.run_evaluation import get_dataset_from_preds
dataset, out = sys.argv[1], sys.argv[2]
loaded = {}
for name in ("preds.json", "predictions.jsonl"):
    preds = get_predictions_from_file(f"{out}/{name}", dataset, "test")
    keyed = {p["instance_id"]: p for p in preds}
    chosen = get_dataset_from_preds(dataset, "test", [], keyed, "check", False)
    loaded[name] = {"predictions": preds, "instances": [i["instance_id"] for i in chosen]}
print(json.dumps(loaded))
"""


@pytest.mark.slow  # imports the swebench package (datasets, docker's client): about 2 s of CPU
def test_the_swebench_packages_own_loader_reads_both_prediction_files(tmp_path: Path) -> None:
    if not Path(SWEBENCH_PYTHON).exists():
        pytest.skip(f"no swebench virtualenv at {SWEBENCH_PYTHON}: .ci/run makes .ci/swebench-venv")
    ids = ["acme__calc-1", "acme__calc-2"]
    dataset = instances_file(tmp_path, *(row(i) for i in ids))
    patch = b"diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a\n+b\n"
    executor: Any = instant({ids[0]: patch}, {})
    options = BatchOptions(dataset, tmp_path / "out", swebench=Swebench(model_name="sprout-agent__m"))
    run_batch(options, {}, lambda: executor)
    done = subprocess.run(
        [SWEBENCH_PYTHON, "-c", LOADER, str(dataset), str(tmp_path / "out")],
        capture_output=True, text=True, cwd=tmp_path, timeout=bounded(120),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("preds.json", "predictions.jsonl"):
        # Every prediction names an instance of the dataset (or the harness raises); one with an empty patch is not
        # run, and its report counts it as an empty patch.
        assert loaded[name]["instances"] == ids[:1]
        assert [p["model_patch"] for p in loaded[name]["predictions"]] == [patch.decode(), ""]
        assert {p["model_name_or_path"] for p in loaded[name]["predictions"]} == {"sprout-agent__m"}
