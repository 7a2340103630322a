"""`sprout-agent batch` in-process: the task file, ids as file names, shards, reading a child's result in both
schemas, what a second run does, the budget and --jobs bound (with an executor double), summary and merge; a
task's tree (its own writable root, git there running nothing the task planted)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.batch import workdir
from sprout_agent.batch.outcome import read_result
from sprout_agent.batch.outdir import OutDir, read_records, to_run
from sprout_agent.batch.runner import BatchOptions, run_batch
from sprout_agent.batch.summary import merge, summarise, table
from sprout_agent.batch.task_run import Finished, Job, command
from sprout_agent.batch.tasks import file_name, load_tasks, parse_shard, shard_of
from sprout_agent.core.errors import EXIT_BUDGET, UsageError
from sprout_agent.trust.sandbox import WORKSPACE_WRITE, Policy, Sandbox
from tests.bounds import bounded
from tests.guards import WEAKENING


def tasks_file(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_task_fields_are_read_and_relative_paths_follow_the_task_file(tmp_path: Path) -> None:
    path = tasks_file(
        tmp_path,
        {"id": 7, "prompt": "p", "cwd": "sub", "config": ["a.json"], "model": "m", "max_turns": 3,
         "max_budget_usd": 0.5, "timeout": 9, "env": {"FOO": "1"}},
        "",
        {"id": "r", "prompt": "q", "repo": "https://example.com/x.git"},
    )  # fmt: skip
    first, second = load_tasks(path)
    assert (first.id, first.cwd, first.config, first.max_turns, first.env) == (
        "7", tmp_path / "sub", (tmp_path / "a.json",), 3, {"FOO": "1"})  # fmt: skip
    assert second.repo == "https://example.com/x.git" and second.cwd is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"prompt": "p"}, "`id` must be"),
        ({"id": "a"}, "`prompt` must be"),
        ({"id": "a", "prompt": "p", "cwd": ".", "repo": "."}, "not both"),
        ({"id": "a", "prompt": "p", "colour": 1}, "unknown field 'colour'"),
        ({"id": "a", "prompt": "p", "max_turns": 0}, "`max_turns` must be a positive number"),
        ({"id": "a", "prompt": "p", "env": {"ANTHROPIC_BASE_URL": "http://evil"}}, "may not set ANTHROPIC_BASE_URL"),
        ({"id": "a", "prompt": "p", "env": {"ANTHROPIC_API_KEY": "k"}}, "may not set ANTHROPIC_API_KEY"),
        ({"id": "a", "prompt": "p", "env": {"https_proxy": "x"}}, "may not set https_proxy"),
        ({"id": "a", "prompt": "p", "env": {"PYTHONPATH": "/x"}}, "may not set PYTHONPATH"),
        ("not json", "not JSON"),
        ({"id": "/", "prompt": "p"}, "`id` must be"),
    ],
)
def test_a_bad_line_is_refused_naming_it(tmp_path: Path, line: Any, message: str) -> None:
    with pytest.raises(UsageError, match=r"tasks\.jsonl line 2: ") as caught:
        load_tasks(tasks_file(tmp_path, {"id": "ok", "prompt": "p"}, line))
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("name", "value"), [*WEAKENING, ("ANTHROPIC_API_KEY", "sk-other"), ("anthropic_model", "m"), ("PATH", "/x")]
)
def test_a_task_env_cannot_weaken_a_guard_of_yours(tmp_path: Path, name: str, value: str) -> None:
    """A task's env is its process's real environment: more than a project's .env could set there."""
    line = {"id": "a", "prompt": "p", "env": {name: value}}
    with pytest.raises(UsageError, match=r"tasks\.jsonl line 1: `env` may not set ") as caught:
        load_tasks(tasks_file(tmp_path, line))
    assert f"may not set {name} (it decides " in str(caught.value) and "\n" not in str(caught.value)


def test_ids_that_become_the_same_file_name_are_duplicates(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"line 3: duplicate task id 'a\?' \(as a file name, the same as line 1\)"):
        load_tasks(
            tasks_file(tmp_path, {"id": "a/", "prompt": "p"}, {"id": "b", "prompt": "p"}, {"id": "a?", "prompt": "p"})
        )


@pytest.mark.parametrize("task_id", ["../../etc/passwd", "..", ".hidden", "a/b\\c", "x\0y", "é"])
def test_an_id_as_a_file_name_stays_in_its_directory(task_id: str) -> None:
    name = file_name(task_id)
    assert "/" not in name and "\\" not in name and "\0" not in name and not name.startswith(".")


def test_shards_split_by_id_every_task_exactly_once_whatever_the_order() -> None:
    ids = [f"task-{n}" for n in range(300)]
    owners = [[shard_of(i, 3) for i in ids], [shard_of(i, 3) for i in reversed(ids)][::-1]]
    assert owners[0] == owners[1]
    assert all(40 < owners[0].count(k) < 160 for k in range(3))


def test_shard_index_comes_from_the_spec_or_the_engines_variables() -> None:
    assert parse_shard("1/4", {}) == (1, 4)
    assert parse_shard("4", {"JOB_COMPLETION_INDEX": "3"}) == (3, 4)
    assert parse_shard("4", {"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "5"}) == (1, 4)
    assert parse_shard("4", {"SPROUT_AGENT_SHARD_INDEX": "2", "JOB_COMPLETION_INDEX": "0"}) == (2, 4)
    for spec, env in (("4/4", {}), ("x/2", {}), ("3", {}), ("0/0", {})):
        with pytest.raises(UsageError, match="--shard"):
            parse_shard(spec, env)


SCHEMA_1 = {"type": "result", "schema_version": 1, "session_id": "s", "result": "done", "stop_reason": "end_turn",
            "exit_code": 0, "turns": 2, "cost_usd": 0.25, "errors": [],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 3,
                      "cache_write_tokens": 4}}  # fmt: skip
SCHEMA_2 = {"type": "result", "subtype": "success", "is_error": False, "result": "done", "num_turns": 2,
            "duration_ms": 9, "total_cost_usd": 0.25, "session_id": "s", "exit_code": 0, "stop_reason": "end_turn",
            "errors": [], "schema_version": 2,
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 3,
                      "cache_creation_input_tokens": 4}}  # fmt: skip


def test_a_result_reads_the_same_in_schema_1_and_claude_codes_shape() -> None:
    assert read_result(SCHEMA_1) == read_result(SCHEMA_2)
    assert read_result(SCHEMA_2)["usage"]["cache_write_tokens"] == 4
    assert read_result({"type": "result", "subtype": "error_max_turns"})["stop_reason"] == "max_turns"
    assert read_result(None)["turns"] == 0


def record(task_id: str, status: str, cost: float = 0.1) -> dict[str, Any]:
    return {"id": task_id, "status": status, "exit_code": 0 if status == "ok" else 1, **read_result(None),
            "cost_usd": cost, "duration_ms": 5, "transcript": f"transcripts/{task_id}.jsonl", "diff": None}  # fmt: skip


def test_a_second_run_skips_finished_tasks_and_retries_failed_ones_only_when_asked(tmp_path: Path) -> None:
    tasks = load_tasks(tasks_file(tmp_path, *({"id": i, "prompt": "p"} for i in "abcde")))
    records = {"a": record("a", "ok"), "b": record("b", "failed"), "c": record("c", "timeout"),
               "d": record("d", "interrupted")}  # fmt: skip
    assert [t.id for t in to_run(tasks, records, retry_failed=False)] == ["d", "e"]
    assert [t.id for t in to_run(tasks, records, retry_failed=True)] == ["b", "c", "d", "e"]


def test_the_last_record_of_an_id_wins_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    out = OutDir(tmp_path)
    out.open()
    out.append(record("a", "interrupted"), "", "")
    out.append(record("a", "ok"), "", "")
    with open(tmp_path / "results.jsonl", "a") as handle:
        handle.write('{"id": "b", "sta')
    assert {k: v["status"] for k, v in read_records(tmp_path).items()} == {"a": "ok"}
    with pytest.raises(UsageError, match="in use by another sprout-agent batch"):
        OutDir(tmp_path).open()
    out.close()


class Instant:
    """An executor double: each task ends at once with the record `outcome` gives it; counts tasks at once."""

    def __init__(self, outcome: Any) -> None:
        self.outcome, self.running, self.most, self.jobs = outcome, list[Job](), 0, list[Job]()

    def submit(self, job: Job) -> None:
        self.running.append(job)
        self.jobs.append(job)
        self.most = max(self.most, len(self.running))

    def wait(self, timeout: float) -> list[Finished]:
        job = self.running.pop(0)
        return [Finished(self.outcome(job), "{}\n", "")]

    def cancel(self) -> None: ...
    def close(self) -> None: ...


def test_the_batch_budget_stops_starting_tasks_and_caps_each_one(tmp_path: Path, capsys: Any) -> None:
    path = tasks_file(tmp_path, *({"id": f"t{n}", "prompt": "p"} for n in range(6)))
    executor = Instant(lambda job: record(job.task.id, "ok", cost=0.1))
    options = BatchOptions(path, tmp_path / "out", jobs=1, max_budget_usd=0.25, output_format="json")
    assert run_batch(options, {}, lambda: executor) == EXIT_BUDGET
    summary = json.loads(capsys.readouterr().out)
    assert (summary["ok"], summary["not_run"]) == (3, 3)
    assert [job.budget_left for job in executor.jobs] == pytest.approx([0.25, 0.15, 0.05])
    assert "--max-budget-usd=0.050000" in command(executor.jobs[2], tmp_path)


def test_no_more_than_jobs_tasks_run_at_once_and_a_job_carries_only_the_tasks_env(tmp_path: Path) -> None:
    path = tasks_file(tmp_path, *({"id": f"t{n}", "prompt": "p", "env": {"N": str(n)}} for n in range(9)))
    executor = Instant(lambda job: record(job.task.id, "ok"))
    environ = {"SPROUT_AGENT_BATCH_AGENT": "nice -n 5 sprout-agent"}
    assert run_batch(BatchOptions(path, tmp_path / "out", jobs=4), environ, lambda: executor) == 0
    assert executor.most == 4
    job = executor.jobs[5]
    assert set(job.env) == {"N", "SPROUT_AGENT_RATE_GATE"}  # over the worker's environment: no key in a Job
    assert command(job, tmp_path)[:5] == ["nice", "-n", "5", "sprout-agent", "-p"]


def test_summary_totals_and_table(tmp_path: Path) -> None:
    records = {"a": record("a", "ok", 0.5), "b": record("b", "failed", 0.25)}
    summary = summarise(["b", "a", "c"], records)
    assert (summary["tasks"], summary["ok"], summary["failed"], summary["not_run"]) == (3, 1, 1, 1)
    assert summary["cost_usd"] == 0.75 and [r["id"] for r in summary["results"]] == ["a", "b"]
    assert table(summary).splitlines()[-1] == "3 tasks: 1 ok, 1 failed, 1 not_run; $0.7500, 0 turns"


def test_merge_wants_batch_directories(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="not a batch --out directory"):
        merge([tmp_path / "empty"], None)


@pytest.mark.parametrize("repo", ["-uhack", "--upload-pack=touch /tmp/pwned;://host/r", "-oProxyCommand=x@host:r"])
def test_a_repo_git_would_read_as_an_option_is_refused(tmp_path: Path, repo: str) -> None:
    with pytest.raises(UsageError, match=r"^tasks\.jsonl line 1: `repo` may not start with '-'"):
        load_tasks(tasks_file(tmp_path, {"id": "a", "prompt": "p", "repo": repo}))


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   timeout=bounded(30), capture_output=True)  # fmt: skip


def committed_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "f.txt").write_text("one\n")
    git("init", "-q", cwd=path)
    git("add", "f.txt", cwd=path)
    git("commit", "-q", "-m", "x", cwd=path)
    return path


@pytest.mark.e2e
def test_a_task_tree_without_repo_inside_the_repository_holding_out_is_its_own_writable_root(tmp_path: Path) -> None:
    holding = committed_repo(tmp_path / "project")
    tree = workdir.prepare(None, None, holding / "out", "a")
    root = os.path.realpath(tree.path)
    assert Sandbox(Policy(mode=WORKSPACE_WRITE, root=root)).writable() == (root,)  # not the project, not out/
    assert workdir.diff(tree) is None  # git never runs in a repository the task owns, config and all


def test_without_git_a_task_tree_inside_a_repository_fails_rather_than_reach_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "project" / ".git").mkdir(parents=True)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))
    with pytest.raises(RuntimeError, match="git is needed to keep the task out of the repository"):
        workdir.prepare(None, None, tmp_path / "project" / "out", "a")
    assert workdir.prepare(None, None, tmp_path / "out", "a").path.is_dir()  # no repository around it


def plant_git(tree: Path, marker: Path) -> None:
    """What a task's write tool can do in its own tree: replace its `.git` with a repository whose config runs a
    program (fsmonitor, hooks, a filter driver and a diff driver the tree's .gitattributes selects), and nest a
    repository with a changed file (`git diff` would run `git status` in it)."""
    (tree / ".git").unlink()  # the pointer of a worktree or of a clone with its git directory elsewhere
    git("init", "-q", cwd=tree)
    committed_repo(tree / "nested")
    program = f"sh -c 'echo ran >> {marker}; cat'"
    for where in (tree, tree / "nested"):
        for key, value in (("core.fsmonitor", program), ("filter.x.clean", program), ("diff.x.command", program),
                           ("diff.x.textconv", program), ("core.hooksPath", str(tree))):  # fmt: skip
            git("config", key, value, cwd=where)
        (where / ".gitattributes").write_text("* filter=x diff=x\n")
    (tree / "post-index-change").write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    (tree / "post-index-change").chmod(0o755)
    (tree / "nested" / "f.txt").write_text("two\n")
    (tree / "f.txt").write_text("changed by the task\n")


@pytest.mark.parametrize("kind", ["worktree", "clone"])
@pytest.mark.e2e
def test_a_git_directory_a_task_plants_in_its_tree_runs_nothing_in_the_batchs_diff(tmp_path: Path, kind: str) -> None:
    repo = committed_repo(tmp_path / "repo")
    source = str(repo) if kind == "worktree" else f"file://{repo}"
    tree = workdir.prepare(source, None, tmp_path / "out", kind)
    marker = tmp_path / "ran"
    plant_git(tree.path, marker)
    text = workdir.diff(tree)
    assert not marker.exists()
    assert text is not None and "-one\n+changed by the task" in text  # the diff of the tree as the batch made it


@pytest.mark.parametrize("cwd", ["/", "~", "HOME_PARENT", "../../../../../../../.."])
def test_a_task_file_cannot_make_the_root_or_your_home_directory_a_tasks_writable_root(
    tmp_path: Path, cwd: str
) -> None:
    """Attack (a hostile batch file): `"cwd": "/"` made the whole tree writable to the task's commands and tools."""
    home = os.path.realpath(os.path.expanduser("~"))
    given = {"~": home, "HOME_PARENT": os.path.dirname(home)}.get(cwd, cwd)
    with pytest.raises(UsageError, match=r"^tasks\.jsonl line 1: `cwd` .* writable to the task; give a project"):
        load_tasks(tasks_file(tmp_path, {"id": "a", "prompt": "p", "cwd": given}))
    project = tmp_path / "project"
    project.mkdir()
    (task,) = load_tasks(tasks_file(tmp_path, {"id": "a", "prompt": "p", "cwd": "project"}))
    assert task.cwd == project
