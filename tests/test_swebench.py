"""`batch --swebench` in-process: SWE-bench rows read as tasks (and bad rows refused in one line), a tree at
`base_commit` from a local clone or from the batch's one clone of the URL, the patch git writes for it (binary
files, renames, modes; test files left out on request) applying at base_commit (these two run git: marked e2e),
and the predictions files."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.batch import workdir
from sprout_agent.batch.runner import BatchOptions, run_batch
from sprout_agent.batch.summary import merge
from sprout_agent.batch.swebench import GITHUB, TEST_FILES, Swebench, load_instances
from sprout_agent.batch.task_run import Finished, Job
from sprout_agent.batch.tasks import Checkout, load_tasks
from sprout_agent.core.errors import EXIT_USAGE, UsageError
from tests.bounds import bounded

BASE = "a" * 40


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=cwd, check=True, capture_output=True, text=True, timeout=bounded(30),
    )  # fmt: skip
    return done.stdout.strip()


def row(instance_id: Any = "acme__calc-1", **fields: Any) -> dict[str, Any]:
    return {"instance_id": instance_id, "repo": "acme/calc", "base_commit": BASE, "problem_statement": "add() is wrong",
            "patch": "THE GOLD PATCH", "test_patch": "diff --git a/t b/t", "version": "1.0"} | fields  # fmt: skip


def instances_file(tmp_path: Path, *rows: Any) -> Path:
    path = tmp_path / "instances.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_instances_become_tasks_in_a_clone_from_the_repos_directory_with_the_issue_as_the_prompt(
    tmp_path: Path,
) -> None:
    (tmp_path / "repos" / "acme__calc").mkdir(parents=True)
    (tmp_path / "repos" / "acme__tools.git").mkdir(parents=True)  # a bare mirror's name works too
    path = instances_file(tmp_path, row(), row("acme__tools-2", repo="acme/tools"))
    first, second = load_instances(path, Swebench(repos=tmp_path / "repos", leave_out_tests=True))
    assert (first.id, first.repo, first.cwd) == ("acme__calc-1", str(tmp_path / "repos" / "acme__calc"), None)
    assert first.checkout is not None and first.checkout.commit == BASE and first.checkout.clone_url is None
    assert first.checkout.leave_out == tuple(f":(exclude,glob){glob}" for glob in TEST_FILES)
    assert "add() is wrong" in first.prompt and "acme/calc" in first.prompt
    assert "GOLD" not in first.prompt and "diff --git" not in first.prompt  # the answer never reaches the agent
    assert second.repo == str(tmp_path / "repos" / "acme__tools.git")


def test_without_a_repos_directory_an_instance_is_cloned_from_github(tmp_path: Path) -> None:
    (task,) = load_instances(instances_file(tmp_path, row()), Swebench())
    assert task.repo is None and task.checkout is not None
    assert (task.checkout.clone_url, task.checkout.leave_out) == (f"{GITHUB}/acme/calc.git", ())


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not JSON"),
        ([1, 2], "a SWE-bench instance is a JSON object"),
        (row(base_commit=None), "`base_commit` must be a non-empty string"),
        (row(problem_statement=" "), "`problem_statement` must be a non-empty string"),
        (row(instance_id=7), "`instance_id` must be a non-empty string"),
        (row(instance_id="///"), "names no file"),
        (row(base_commit="main"), "`base_commit` must be a full commit id"),
        (row(base_commit="--output=/tmp/x" + "a" * 25), "`base_commit` must be a full commit id"),
        (row(repo="../../etc/x"), "`repo` must be GitHub's owner/name"),
        (row(repo="-oProxyCommand=x/y"), "`repo` must be GitHub's owner/name"),
        (row(repo="acme/calc/../../x"), "`repo` must be GitHub's owner/name"),
        (row(repo="acme/.."), "`repo` must be GitHub's owner/name"),
    ],
)
def test_a_malformed_row_is_refused_in_one_line_naming_it(tmp_path: Path, line: Any, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        load_instances(instances_file(tmp_path, row("ok-0"), line), Swebench())
    assert "instances.jsonl line 2" in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.exit_code == EXIT_USAGE


def test_a_malformed_instance_file_stops_the_batch_before_it_makes_out_or_runs_anything(tmp_path: Path) -> None:
    executor = instant({}, {})
    options = BatchOptions(
        instances_file(tmp_path, row(), row(base_commit="HEAD")), tmp_path / "out", swebench=Swebench()
    )
    with pytest.raises(UsageError, match=r"^instances.jsonl line 2: `base_commit` must be a full commit id"):
        run_batch(options, {}, lambda: executor)
    assert not (tmp_path / "out").exists() and executor.jobs == []


def test_duplicate_instances_and_a_repository_missing_from_the_repos_directory_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="line 2: duplicate task id 'acme__calc-1'"):
        load_instances(instances_file(tmp_path, row(), row()), Swebench())
    (tmp_path / "repos").mkdir()
    with pytest.raises(UsageError, match=r"line 1: no clone of acme/calc in --swebench-repos"):
        load_instances(instances_file(tmp_path, row()), Swebench(repos=tmp_path / "repos"))


def test_a_swebench_row_given_as_a_plain_task_file_says_to_use_swebench(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"line 1: a SWE-bench instance, not a task: run `batch --swebench`"):
        load_tasks(instances_file(tmp_path, row()))


def two_commits(path: Path) -> tuple[Path, str]:
    """A repository whose HEAD is a commit after the base: the tree must be at the base, not at HEAD."""
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (path / "old_name.py").write_text("X = 1\n")
    (path / "run.sh").write_text("echo run\n")
    (path / "gone.txt").write_text("bye\n")
    git("add", "-A", cwd=path)
    git("commit", "-qm", "base", cwd=path)
    base = git("rev-parse", "HEAD", cwd=path)
    (path / "calc.py").write_text("later\n")
    git("commit", "-qam", "later", cwd=path)
    return path, base


def edit_like_a_model(tree: Path) -> None:
    (tree / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    os.rename(tree / "old_name.py", tree / "new_name.py")
    (tree / "run.sh").chmod(0o755)
    (tree / "logo.png").write_bytes(bytes(range(256)) * 4)
    (tree / "gone.txt").unlink()
    (tree / "tests").mkdir()
    (tree / "tests" / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    (tree / "test_top.py").write_text("pass\n")


def applied_at_base(repo: Path, base: str, patch: bytes, where: Path) -> Path:
    """A fresh checkout of `base` with `patch` applied by `git apply` (what the harness runs first)."""
    git("worktree", "add", "-q", "--detach", str(where), base, cwd=repo)
    subprocess.run(["git", "apply", "--check", "-"], input=patch, cwd=where, check=True, timeout=bounded(30))
    subprocess.run(["git", "apply", "-"], input=patch, cwd=where, check=True, timeout=bounded(30))
    return where


@pytest.mark.e2e  # real git
def test_a_checkout_patch_applies_at_base_commit_with_binary_files_renames_modes_and_commits_and_can_leave_out_tests(
    tmp_path: Path,
) -> None:
    repo, base = two_commits(tmp_path / "repo")
    tree = workdir.prepare(str(repo), None, tmp_path / "out", "i", Checkout(base))
    assert (tree.path / "calc.py").read_text().endswith("a - b\n")  # at the base, not the later HEAD
    (tree.path / "calc.py").write_text("committed by the task\n")
    git("commit", "-qam", "the task's own commit", cwd=tree.path)
    edit_like_a_model(tree.path)
    patch = workdir.patch(tree, Checkout(base))
    assert patch is not None
    assert b"rename from old_name.py" in patch and b"new mode 100755" in patch and b"GIT binary patch" in patch
    applied = applied_at_base(repo, base, patch, tmp_path / "check")
    for name in ("calc.py", "new_name.py", "logo.png", "tests/test_calc.py", "test_top.py"):
        assert (applied / name).read_bytes() == (tree.path / name).read_bytes(), name
    assert os.access(applied / "run.sh", os.X_OK) and not (applied / "gone.txt").exists()
    assert not (applied / "old_name.py").exists()
    patch_without_tests(tree, base)


def patch_without_tests(tree: workdir.Tree, base: str) -> None:
    """--exclude-tests: the same tree's patch has every change but the test files (named by TEST_FILES)."""
    for name in ("testing/helper.py", "pkg/test/data.txt", "web/__tests__/a.js", "web/a.test.js", "pkg/b_test.go",
                 "pkg/conftest.py", "pkg/tests.py", "pkg/test_x.py", "pkg/x_test.py", "web/a.spec.ts"):  # fmt: skip
        (tree.path / name).parent.mkdir(parents=True, exist_ok=True)
        (tree.path / name).write_text("a test\n")
    (tree.path / "pkg" / "contest.py").write_text("a module\n")
    leave_out = tuple(f":(exclude,glob){glob}" for glob in TEST_FILES)
    patch = workdir.patch(tree, Checkout(base, leave_out=leave_out)) or b""
    assert b"test" not in patch.replace(b"contest", b"")  # no test file's name anywhere in it
    assert b"b/calc.py" in patch and b"b/pkg/contest.py" in patch and b"GIT binary patch" in patch


@pytest.mark.e2e  # real git
def test_a_repository_without_a_local_clone_is_cloned_once_into_out_and_shared_by_its_instances(
    tmp_path: Path,
) -> None:
    repo, base = two_commits(tmp_path / "acme" / "calc")
    checkout = Checkout(base, clone_url=f"file://{repo}")
    first = workdir.prepare(None, None, tmp_path / "out", "one", checkout)
    git("commit", "-q", "--allow-empty", "-m", "after the clone", cwd=repo)
    second = workdir.prepare(None, None, tmp_path / "out", "two", checkout)
    assert sorted(os.listdir(tmp_path / "out" / "repos")) == [".acme__calc.git.lock", "acme__calc.git"]
    clone = tmp_path / "out" / "repos" / "acme__calc.git"
    assert git("rev-parse", "--is-bare-repository", cwd=clone) == "true"
    assert git("rev-list", "--count", "--all", cwd=clone) == "2"  # not cloned again for the second instance
    for tree in (first, second):
        assert (tree.path / "calc.py").read_text().endswith("a - b\n")


def instant(patches: dict[str, bytes | None], statuses: dict[str, str]) -> Any:
    class Instant:
        def __init__(self) -> None:
            self.jobs: list[Job] = []

        def submit(self, job: Job) -> None:
            self.jobs.append(job)

        def wait(self, timeout: float) -> list[Finished]:
            task = self.jobs.pop(0).task
            record = {"id": task.id, "status": statuses.get(task.id, "ok"), "cost_usd": 0, "usage": {}}
            return [Finished(record, "{}\n", "", patches.get(task.id, b""))]

        def cancel(self) -> None: ...
        def close(self) -> None: ...

    return Instant()


def write_predictions_of(tmp_path: Path, statuses: dict[str, str], **swebench: Any) -> Path:
    ids = ["b__b-2", "a__a-1", "c__c-3"]
    path = instances_file(tmp_path, *(row(i, repo=i.split("-")[0].replace("__", "/")) for i in ids))
    patches = {"b__b-2": b"diff --git a/x b/x\n", "a__a-1": None, "c__c-3": b"diff --git a/y b/y\n"}
    executor = instant(patches, statuses)
    options = BatchOptions(path, tmp_path / "out", jobs=2, swebench=Swebench(**swebench))
    run_batch(options, {}, lambda: executor)
    return tmp_path / "out"


def test_predictions_hold_each_finished_instance_in_file_order_in_both_forms(tmp_path: Path) -> None:
    out = write_predictions_of(tmp_path, {"c__c-3": "interrupted"}, model_name="sprout-agent__m")
    lines = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert lines == [
        {"instance_id": "b__b-2", "model_name_or_path": "sprout-agent__m", "model_patch": "diff --git a/x b/x\n"},
        {"instance_id": "a__a-1", "model_name_or_path": "sprout-agent__m", "model_patch": ""},
    ]  # the interrupted one runs again next time: no prediction yet
    assert json.loads((out / "preds.json").read_text()) == {line["instance_id"]: line for line in lines}
    assert (out / "preds.json").stat().st_mode & 0o777 == 0o600


def test_a_later_run_replaces_an_instances_patch_and_adds_what_it_finished(tmp_path: Path) -> None:
    write_predictions_of(tmp_path, {"c__c-3": "interrupted"})
    out = write_predictions_of(tmp_path, {})  # the same --out: only c__c-3 runs again
    preds = json.loads((out / "preds.json").read_text())
    assert sorted(preds) == ["a__a-1", "b__b-2", "c__c-3"]
    assert preds["c__c-3"]["model_patch"] == "diff --git a/y b/y\n"


def test_merging_shards_merges_their_predictions(tmp_path: Path) -> None:
    ids = [f"acme__calc-{n}" for n in range(4)]
    path = instances_file(tmp_path, *(row(i) for i in ids))
    for index in (0, 1):
        executor = instant({i: f"diff --git a/{i} b/{i}\n".encode() for i in ids}, {})
        options = BatchOptions(path, tmp_path / f"shard{index}", shard=f"{index}/2", swebench=Swebench())
        run_batch(options, {}, lambda executor=executor: executor)
    merge([tmp_path / "shard0", tmp_path / "shard1"], tmp_path / "all")
    preds = json.loads((tmp_path / "all" / "preds.json").read_text())
    assert sorted(preds) == ids and preds["acme__calc-3"]["model_patch"] == "diff --git a/acme__calc-3 b/acme__calc-3\n"
    assert len((tmp_path / "all" / "predictions.jsonl").read_text().splitlines()) == 4
