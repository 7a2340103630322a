"""`sprout-agent batch` as a process: the runner, the out directory, signals, shards and merge, and what a task can
reach (the repository around --out, a repository's hooks, orphans). Most tasks run tests/stub_agent.py
(SPROUT_AGENT_BATCH_AGENT), which starts in milliseconds where the real CLI takes seconds; two tests run the real
CLI against the fake API, which is what the stub stands in for."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.trust import sandbox as _sandbox
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, error, reply, tool_use
from tests.harness import (
    ROOT,
    agent_command,
    agent_env,
    kill_pid,
    read_log,
    result_text,
    start_agent,
    tool_results,
    wait_dead,
    wait_for,
    wait_until,
)
from tests.other_account import other_account_or_skip, shared_directory

pytestmark = pytest.mark.e2e
STUB = f"{sys.executable} {ROOT / 'tests' / 'stub_agent.py'}"


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


def batch(tmp_path: Path, args: list[str], extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = agent_env(tmp_path, None, {"SPROUT_AGENT_BATCH_AGENT": STUB, **(extra or {})})
    return subprocess.run(
        agent_command(["batch", *args]), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=bounded(120)
    )


def git_repo(path: Path) -> Path:
    path.mkdir()
    for args in (
        ["init", "-q"],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, timeout=bounded(30))
    return path


def without_timing(summary: dict[str, Any]) -> dict[str, Any]:
    rows = [{k: v for k, v in row.items() if k not in ("duration_ms", "session_id")} for row in summary["results"]]
    return {k: v for k, v in summary.items() if k != "duration_ms"} | {"results": rows}


@pytest.mark.slow
def test_twenty_tasks_four_at_a_time_with_one_failing_and_one_timing_out(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    tasks: list[dict[str, Any]] = [{"id": f"t{n:02}", "prompt": f"task {n}"} for n in range(20)]
    tasks[3] |= {"prompt": "please fail"}
    tasks[7] |= {"prompt": "hang here", "timeout": 1}
    for n in (1, 2):
        tasks[n]["repo"] = "repo"
    tasks[0]["id"] = "../../escape"
    run = batch(tmp_path, [str(write_tasks(tmp_path / "tasks.jsonl", tasks)), "--out", "out", "-j", "4",
                           "--output-format", "json"])  # fmt: skip
    assert run.returncode == 1, run.stderr
    summary = json.loads(run.stdout)
    records = {r["id"]: r for r in read_log(tmp_path / "out" / "results.jsonl")}
    unexpected = [r for i, r in records.items() if r["status"] != "ok" and i not in ("t03", "t07")]
    assert (summary["tasks"], summary["ok"], summary["failed"], summary["timeout"]) == (20, 18, 1, 1), unexpected
    assert len(records) == 20
    assert records["t03"]["status"] == "failed" and records["t03"]["exit_code"] == 1
    assert records["t07"]["status"] == "timeout" and records["t07"]["exit_code"] == 143
    assert "timed out after 1 s" in records["t07"]["errors"]
    assert records["t05"]["result"] == "answer to task 5" and records["t05"]["cost_usd"] == 0.001
    for n in (1, 2):  # each repo task in its own worktree; the repository itself untouched
        assert f"+task {n}" in records[f"t{n:02}"]["diff"] and "answer.txt" in records[f"t{n:02}"]["diff"]
    assert not (repo / "answer.txt").exists()
    assert records["t05"]["diff"] is None  # an empty directory of ours: no repository, no diff
    escaped = records["../../escape"]
    assert escaped["transcript"] == "transcripts/_._.._escape.jsonl"
    assert (tmp_path / "out" / escaped["transcript"]).is_file() and not (tmp_path.parent / "escape").exists()
    assert run.stderr.count("| ") == 20 and "20/20 done, 2 failed, 0 running" in run.stderr


@pytest.mark.slow
def test_a_second_run_after_ctrl_c_runs_only_what_was_not_finished(tmp_path: Path) -> None:
    marker = tmp_path / "let-them-finish"
    tasks = [{"id": f"q{n}", "prompt": f"quick {n}"} for n in range(3)]
    tasks += [{"id": f"h{n}", "prompt": f"hang {n}"} for n in range(3)]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    # Six at once: every hanging task is running before the quick ones finish (with fewer jobs, one could still
    # be waiting for a slot when Ctrl-C comes, and then it is not interrupted but never started).
    args = ["batch", "tasks.jsonl", "--out", "out", "--jobs", "6"]
    extra = {"SPROUT_AGENT_BATCH_AGENT": STUB, "STUB_HANG_UNLESS": str(marker)}
    results = tmp_path / "out" / "results.jsonl"
    process = start_agent(tmp_path, args, fake=None, env=extra)  # type: ignore[arg-type]
    wait_for(lambda: len(read_log(results)) == 3, "the three quick tasks", process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=bounded(60))
    assert process.returncode == 130, err
    first = {r["id"]: r for r in read_log(results)}
    assert {r["status"] for i, r in first.items() if i.startswith("h")} == {"interrupted"}
    assert {first[f"h{n}"]["exit_code"] for n in range(3)} == {130}
    assert b"3 interrupted" in out
    marker.touch()
    again = batch(tmp_path, ["tasks.jsonl", "--out", "out", "--jobs", "4"], {"STUB_HANG_UNLESS": str(marker)})
    assert again.returncode == 0, again.stderr
    lines = read_log(results)
    assert sorted(r["id"] for r in lines[6:]) == ["h0", "h1", "h2"]  # the quick ones were not run again
    assert "6 ok" in again.stdout


@pytest.mark.slow
def test_three_shards_cover_every_task_once_and_merge_gives_the_single_machine_summary(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"s{n}", "prompt": f"shard task {n}"} for n in range(9)])
    base = agent_env(tmp_path, None, {"SPROUT_AGENT_BATCH_AGENT": STUB})
    ways = [(["--shard", "0/3"], {}), (["--shard", "3"], {"JOB_COMPLETION_INDEX": "1"}),
            (["--shard", "3"], {"SPROUT_AGENT_SHARD_INDEX": "2", "JOB_COMPLETION_INDEX": "0"})]  # fmt: skip
    shards = [
        subprocess.Popen(
            agent_command(["batch", "tasks.jsonl", "--out", f"shard{i}", "-j", "2", *args]),
            env=base | env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for i, (args, env) in enumerate(ways)
    ]
    single = batch(tmp_path, ["tasks.jsonl", "--out", "single", "-j", "3", "--output-format", "json"])
    assert [shard.wait(timeout=bounded(120)) for shard in shards] == [0, 0, 0]
    ids = [r["id"] for i in range(3) for r in read_log(tmp_path / f"shard{i}" / "results.jsonl")]
    assert sorted(ids) == [f"s{n}" for n in range(9)]  # each task in exactly one shard
    merged = batch(tmp_path, ["merge", "shard0", "shard1", "shard2", "--out", "merged", "--output-format", "json"])
    assert merged.returncode == 0, merged.stderr
    assert without_timing(json.loads(merged.stdout)) == without_timing(json.loads(single.stdout))
    assert len(read_log(tmp_path / "merged" / "results.jsonl")) == 9
    assert len(list((tmp_path / "merged" / "transcripts").glob("*.jsonl"))) == 9


@pytest.mark.slow
def test_the_real_cli_against_the_fake_api(tmp_path: Path) -> None:
    def route(body: dict[str, Any]) -> Any:
        prompt = json.dumps(body["messages"][0])
        if "broken" in prompt:
            return error(400, message="fake: bad request")
        return reply("all done", usage={"input_tokens": 1000, "output_tokens": 100})

    # Two tasks: each real CLI costs seconds of CPU; the stub tests cover the timeout (the CLI's SIGTERM result is
    # tests/test_scripting.py's).
    tasks = [{"id": "good", "prompt": "do it"}, {"id": "bad", "prompt": "broken"}]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    with FakeAnthropic([route] * 4) as fake:
        env = agent_env(tmp_path, fake)
        run = subprocess.run(
            agent_command(["batch", "tasks.jsonl", "--out", "out", "-j", "2", "--model", "claude-sonnet-4-5"]),
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=bounded(120),
        )  # fmt: skip
    assert run.returncode == 1, run.stderr
    records = {r["id"]: r for r in read_log(tmp_path / "out" / "results.jsonl")}
    good = records["good"]
    assert (good["status"], good["exit_code"], good["stop_reason"], good["result"]) == ("ok", 0, "end_turn", "all done")
    assert good["usage"]["input_tokens"] == 1000 and good["turns"] == 1 and good["cost_usd"] > 0
    assert len(good["session_id"]) >= 8
    assert (records["bad"]["status"], records["bad"]["exit_code"]) == ("failed", 1)
    assert any("400" in e for e in records["bad"]["errors"])
    transcript = (tmp_path / "out" / good["transcript"]).read_text().splitlines()
    assert json.loads(transcript[0])["subtype"] == "init" and json.loads(transcript[-1])["type"] == "result"


def test_the_ray_executor_on_a_local_ray_instance(tmp_path: Path) -> None:
    # A local Ray instance costs ~15 s of CPU on two cores, which the README test command cannot afford: .ci/run
    # runs this test as its own step, after scripts/test, with SPROUT_TEST_RAY=1.
    if os.environ.get("SPROUT_TEST_RAY") != "1":
        pytest.skip("the Ray test runs as its own CI step (SPROUT_TEST_RAY=1)")
    pytest.importorskip("ray")
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "r1", "prompt": "one"}, {"id": "r2", "prompt": "fail"}])
    run = batch(tmp_path, ["tasks.jsonl", "--out", "out", "--executor", "ray", "--output-format", "json"],
                {"RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", "RAY_AUTH_MODE": "disabled"})  # fmt: skip
    assert run.returncode == 1, run.stderr
    summary = json.loads(run.stdout)
    assert (summary["ok"], summary["failed"]) == (1, 1)
    assert {r["id"]: r["status"] for r in read_log(tmp_path / "out" / "results.jsonl")} == {"r1": "ok", "r2": "failed"}


def test_a_task_file_with_a_duplicate_id_is_refused_in_one_line(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}])
    run = batch(tmp_path, ["tasks.jsonl", "--out", "out"])
    assert run.returncode == 2
    assert (
        run.stderr.strip()
        == "sprout-agent: tasks.jsonl line 2: duplicate task id 'a' (as a file name, the same as line 1)"
    )
    assert os.listdir(tmp_path) == ["tasks.jsonl"] or not (tmp_path / "out").exists()


def mount(arg: str, root: Path) -> str:
    """A path in the pod (/tasks/…, /results/…) as the directory standing in for its volume here."""
    return str(root) + arg if arg.startswith(("/tasks/", "/results/")) else arg


@pytest.mark.slow
def test_the_kubernetes_indexed_job_in_the_docs_runs_and_merges(tmp_path: Path) -> None:
    """docs/batch.md's manifest: its `args` run once per completion index, as the Job's pods would (the variable
    expanded as Kubernetes expands `$(VAR)`, /tasks and /results mapped to directories here), then merged."""
    docs = (ROOT / "docs" / "batch.md").read_text()
    manifest = docs[docs.index("kind: Job") : docs.index("```", docs.index("kind: Job"))]
    completions = int(re.search(r"completions: (\d+)", manifest)[1])  # type: ignore[index]
    assert "completionMode: Indexed" in manifest and 'command: ["sprout-agent"]' in manifest
    args = json.loads(re.search(r"args: (\[.*\])", manifest)[1])  # type: ignore[index]  # flow style is JSON
    (tmp_path / "tasks").mkdir()
    write_tasks(tmp_path / "tasks" / "tasks.jsonl", [{"id": f"k{n}", "prompt": f"k {n}"} for n in range(6)])
    for index in range(completions):
        pod_args = [mount(a, tmp_path).replace("$(JOB_COMPLETION_INDEX)", str(index)) for a in args]
        assert batch(tmp_path, pod_args[1:], {"JOB_COMPLETION_INDEX": str(index)}).returncode == 0
    shards = [str(tmp_path / "results" / f"shard-{i}") for i in range(completions)]
    merged = batch(tmp_path, ["merge", *shards, "--output-format", "json"])
    assert (json.loads(merged.stdout)["tasks"], json.loads(merged.stdout)["ok"]) == (6, 6)


@pytest.mark.slow
def test_flags_after_a_double_dash_reach_every_task_but_not_the_ones_the_batch_sets(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "prompt": "p"}])
    run = batch(tmp_path, ["tasks.jsonl", "--out", "out", "--model", "m1", "--", "--effort", "high"])
    assert run.returncode == 0, run.stderr
    init = json.loads((tmp_path / "out" / "transcripts" / "a.jsonl").read_text().splitlines()[0])
    assert init["args"][-6:] == ["--model", "m1", "--effort", "high", "--", "p"]  # the prompt last, after `--`
    refused = batch(tmp_path, ["tasks.jsonl", "--out", "out", "--", "--cwd=/"])
    assert refused.returncode == 2 and "--cwd is the batch's to set" in refused.stderr
    refused = batch(tmp_path, ["tasks.jsonl", "--out", "out", "--", "--effort", "high", "--", "a prompt"])
    assert refused.returncode == 2 and "-- is the batch's to set" in refused.stderr  # what follows it is the prompt


def hooked_repo(path: Path, marker: Path) -> Path:
    """A repository whose hooks (in .git/hooks and in the core.hooksPath its config names) and fsmonitor each
    append a line to `marker` whenever git would run them."""
    repo = git_repo(path)
    program = path.parent / "hook-program"
    program.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\n')
    program.chmod(0o755)
    named = path.parent / "named-hooks"
    named.mkdir()
    for hooks in (repo / ".git" / "hooks", named):
        for hook in ("post-checkout", "post-index-change", "reference-transaction"):
            (hooks / hook).symlink_to(program)
    for key, value in (("core.hooksPath", str(named)), ("core.fsmonitor", str(program))):
        subprocess.run(["git", "config", key, value], cwd=repo, check=True, timeout=bounded(30))
    return repo


def test_a_task_repositorys_hooks_and_fsmonitor_do_not_run_in_the_batchs_git_calls(tmp_path: Path) -> None:
    marker = tmp_path / "hooks-ran"
    hooked_repo(tmp_path / "repo", marker)
    subprocess.run(["git", "status"], cwd=tmp_path / "repo", check=True, timeout=bounded(30), capture_output=True)
    assert marker.exists(), "the planted fsmonitor does run for a plain git call"
    marker.unlink()
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "w", "prompt": "edit", "repo": "repo"}])
    run = batch(tmp_path, ["tasks.jsonl", "--out", "out"])  # worktree prune and add, add -N, diff
    assert run.returncode == 0, run.stderr
    assert not marker.exists(), marker.read_text()
    assert "+edit" in read_log(tmp_path / "out" / "results.jsonl")[0]["diff"]


def children_running(parent: int, program: str) -> list[int]:
    """Live children of `parent` whose command line holds `program`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split() if entry.name.isdigit() else []
            ours = bool(fields) and int(fields[1]) == parent and fields[0] != "Z"
            if ours and program.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.anyio
async def test_sigkill_of_the_batch_leaves_no_task_agent_running(tmp_path: Path) -> None:
    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"h{n}", "prompt": f"hang {n}"} for n in range(2)])
    args = ["batch", "tasks.jsonl", "--out", "out", "--jobs", "2"]
    env = {"SPROUT_AGENT_BATCH_AGENT": STUB}
    process = start_agent(tmp_path, args, fake=None, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # type: ignore[arg-type]
    agents: list[int] = []
    try:
        await wait_until(lambda: len(children_running(process.pid, "stub_agent.py")) == 2, "both tasks' agents", 60)
        agents = children_running(process.pid, "stub_agent.py")
        process.kill()
        process.wait(timeout=bounded(10))
        await wait_dead(*agents, timeout=10)
    finally:
        process.kill()
        for pid in agents:
            kill_pid(pid)


SANDBOXED = pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}")


@SANDBOXED
def test_a_task_without_repo_or_cwd_cannot_write_the_repository_holding_out_its_results_or_another_tasks_tree(
    tmp_path: Path,
) -> None:
    project = git_repo(tmp_path / "project")
    (project / "README").write_text("mine\n")
    out = project / "out"
    attack = (f"echo in-my-tree > mine.txt; echo pwned > {project}/README; echo pwned > {project}/planted; "
              f"echo pwned >> {out}/results.jsonl; echo pwned > {out}/work/first/planted")  # fmt: skip

    def route(body: dict[str, Any]) -> Any:
        if "attack" not in json.dumps(body["messages"][0]) or tool_results(body):
            return reply("done")
        return reply(tool_use("dev__bash", {"command": attack}), tool_use("dev__write", {
            "file_path": f"{project}/README", "content": "pwned\n"}))  # fmt: skip

    # One job: the first task's tree and record exist while the second one runs.
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "first", "prompt": "hello"}, {"id": "second", "prompt": "attack"}])
    with FakeAnthropic([route] * 3) as fake:
        run = subprocess.run(
            agent_command(["batch", "tasks.jsonl", "--out", str(out), "-j", "1", "--", "--sandbox", "required"]),
            capture_output=True, text=True, cwd=tmp_path, timeout=bounded(120),
            env=agent_env(tmp_path, fake, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}),
        )  # fmt: skip
        write_result = result_text(tool_results(fake.requests[-1].body)[1])
    assert run.returncode == 0, run.stderr
    assert (out / "work" / "second" / "mine.txt").read_text() == "in-my-tree\n"  # the command did run
    # Under the sandbox's private /tmp a write may land in a scratch copy of the path (pytest's tmp_path is in /tmp),
    # so what counts is the host's files, not the command's messages.
    assert "refusing to write" in write_result, write_result
    assert (project / "README").read_text() == "mine\n" and not (project / "planted").exists()
    assert [r["id"] for r in read_log(out / "results.jsonl")] == ["first", "second"]
    assert os.listdir(out / "work" / "first") == [".git"]


@pytest.mark.slow
def test_a_tasks_record_says_how_to_rewind_its_tree_and_that_command_does(tmp_path: Path) -> None:
    """The real CLI: the task's session lives where the batch's user keeps sessions, so the record's command, run
    later by a reviewer with the same environment, finds it and puts the task's tree back."""
    repo = git_repo(tmp_path / "repo")
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "edit", "prompt": "add a file", "repo": str(repo)}])
    script = [reply(tool_use("dev__write", {"file_path": "new.txt", "content": "n\n"}, id="t_new")), reply("added")]
    with FakeAnthropic(script) as fake:
        env = agent_env(tmp_path, fake, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"})
        run = subprocess.run(
            agent_command(["batch", "tasks.jsonl", "--out", "out"]),
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=bounded(120),
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    (record,) = read_log(tmp_path / "out" / "results.jsonl")
    tree = Path(record["cwd"])
    assert (tree / "new.txt").exists()
    command = f"sprout-agent sessions rewind {record['session_id']} --to 1 --files-only"
    assert record["checkpoints"] == {"turns": [1], "rewind": command}
    rewound = subprocess.run(
        agent_command([*command.split()[1:], "--json"]),
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=bounded(60),
    )  # fmt: skip
    assert rewound.returncode == 0, rewound.stderr
    assert json.loads(rewound.stdout)["restored"] == ["new.txt"]  # as the session saw it: from its directory
    assert not (tree / "new.txt").exists()


def test_a_batch_tasks_prompt_read_as_an_option_reaches_the_model_as_text_and_starts_no_server(tmp_path: Path) -> None:
    """The attack: a `repo` task whose prompt is `--mcp-config`, its repository holding a file named
    `--output-format` that configures a server (and a .mcp.json naming it too). The child used to run
    `-p --mcp-config --output-format …`: the repository's server started with no approval and no sandbox."""
    marker = tmp_path / "server-ran"
    servers = {"mcpServers": {"evil": {"command": "sh", "args": ["-c", f"id > {marker}"]}}}
    repo = git_repo(tmp_path / "repo")
    for name in ("--output-format", ".mcp.json"):
        (repo / name).write_text(json.dumps(servers))
    subprocess.run(["git", "add", "--", "--output-format", ".mcp.json"], cwd=repo, check=True, timeout=bounded(30))
    commit = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "servers"]
    subprocess.run(commit, cwd=repo, check=True, timeout=bounded(30))
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "opt", "prompt": "--mcp-config", "repo": "repo"}])
    with FakeAnthropic([reply("a prompt, not an option")]) as fake:
        run = subprocess.run(
            agent_command(["batch", "tasks.jsonl", "--out", "out"]),
            capture_output=True, text=True, env=agent_env(tmp_path, fake), cwd=tmp_path, timeout=bounded(120),
        )  # fmt: skip
        sent = fake.requests[0].body["messages"][0]["content"]
    assert run.returncode == 0, run.stderr
    (record,) = read_log(tmp_path / "out" / "results.jsonl")
    assert (record["status"], record["result"]) == ("ok", "a prompt, not an option")
    texts = [sent] if isinstance(sent, str) else [block.get("text") for block in sent]
    assert "--mcp-config" in texts, sent
    assert (Path(record["cwd"]) / "--output-format").is_file()  # the file was there to be read as a config
    assert not marker.exists()


def test_a_batch_on_an_out_directory_another_user_made_exits_2_in_one_line_and_leaves_it_alone(
    tmp_path: Path,
) -> None:
    account = other_account_or_skip()
    (tmp_path / "proj").mkdir()
    (tmp_path / "keep.txt").write_text("keep me\n")
    write_tasks(tmp_path / "tasks.jsonl", [{"id": "proj", "prompt": "p"}])
    with shared_directory() as shared:
        account.run(f"mkdir -m 0777 out && ln -s {tmp_path} out/work && ln -s {tmp_path}/keep.txt out/.lock", shared)
        run = batch(tmp_path, ["tasks.jsonl", "--out", str(shared / "out")])
        assert sorted(os.listdir(shared / "out")) == [".lock", "work"]
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [
        f"sprout-agent: --out {shared / 'out'}: {shared / 'out'} belongs to another user (uid {account.uid}): "
        "use a directory of your own"
    ]
    assert (tmp_path / "proj").is_dir() and (tmp_path / "keep.txt").read_text() == "keep me\n"
