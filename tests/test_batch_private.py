"""What one user's batch writes, no other user can steer or read (batch/private.py): a `--out` another user made,
or could write, or holding links where directories belong, is refused before anything is read, written or
deleted; results, transcripts, logs and pages are 0600 in 0700 directories; a task's tree is deleted without
following a link. And a task's prompt is an operand after `--`, never an option (trust/child_argv.py)."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from sprout_agent.batch import workdir
from sprout_agent.batch.outdir import OutDir
from sprout_agent.batch.private import PrivateDir, Unsafe, write_file
from sprout_agent.batch.runner import BatchOptions, LocalExecutor, run_batch
from sprout_agent.batch.summary import merge
from sprout_agent.batch.task_run import Job, command
from sprout_agent.batch.tasks import load_tasks
from sprout_agent.core.errors import UsageError
from sprout_agent.faces.cli.app import app
from sprout_agent.faces.cli.argv import POSITIONAL
from sprout_agent.faces.cli.claude_flags import rewrite
from sprout_agent.faces.pages.batch_report import write_report
from sprout_agent.model.rate_gate import RateGate
from sprout_agent.trust.child_argv import with_operands
from tests.bounds import bounded
from tests.harness import ROOT
from tests.other_account import other_account_or_skip, shared_directory

STUB = f"{sys.executable} {ROOT / 'tests' / 'stub_agent.py'}"


def victim_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / "proj" / "code.py").write_text("mine\n")
    (home / "keep.txt").write_text("keep me\n")
    return home


def untouched(home: Path) -> bool:
    return (home / "proj" / "code.py").read_text() == "mine\n" and (home / "keep.txt").read_text() == "keep me\n"


def tasks(tmp_path: Path, *ids: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"id": i, "prompt": f"do {i}"}) + "\n" for i in ids))
    return path


def batch_on(tmp_path: Path, out: Path) -> int:
    """The victim's batch on `out`: a task named like the victim's project, run by the real runner."""
    options = BatchOptions(tasks(tmp_path, "proj"), out, jobs=1)
    return run_batch(options, {"SPROUT_AGENT_BATCH_AGENT": STUB}, LocalExecutor)


@pytest.mark.e2e
def test_an_out_directory_pre_created_by_another_local_user_with_work_and_lock_links_deletes_and_truncates_nothing(
    tmp_path: Path,
) -> None:
    """The attack: another account makes the --out directory 0777 with `work -> ~` and `.lock -> ~/keep.txt`;
    the victim's batch used to delete ~/proj through the link and truncate ~/keep.txt."""
    account = other_account_or_skip()
    home = victim_home(tmp_path)
    with shared_directory() as shared:
        account.run(f"mkdir -m 0777 out && ln -s {home} out/work && ln -s {home}/keep.txt out/.lock", shared)
        out = shared / "out"
        assert os.stat(out).st_uid == account.uid
        with pytest.raises(UsageError, match=r"belongs to another user \(uid \d+\)"):
            batch_on(tmp_path, out)
        with pytest.raises(Unsafe, match="belongs to another user"):
            write_report(out)  # its records are not ours to read into a page, nor its links to write through
        with pytest.raises(UsageError, match="belongs to another user"):
            merge([], out)
        assert untouched(home)
        assert sorted(os.listdir(out)) == [".lock", "work"]  # nothing of ours written there either


def test_an_out_directory_of_yours_that_others_can_write_is_refused_before_anything_is_done_in_it(
    tmp_path: Path,
) -> None:
    home = victim_home(tmp_path)
    for mode in (0o777, 0o775):
        out = tmp_path / f"out-{mode:o}"
        out.mkdir()
        out.chmod(mode)
        (out / "work").symlink_to(home)
        (out / ".lock").symlink_to(home / "keep.txt")
        with pytest.raises(UsageError, match=rf"can be written by other users \(mode {oct(mode)}\)"):
            batch_on(tmp_path, out)
        assert untouched(home) and sorted(os.listdir(out)) == [".lock", "work"]


@pytest.mark.parametrize(
    ("planted", "target", "says"),
    [
        ("", "home", "is a symbolic link"),  # --out itself
        ("work", "home", "work is a symbolic link"),
        ("transcripts", "home", "transcripts is a symbolic link"),
        ("git", "home", "git is a symbolic link"),
        (".lock", "home/keep.txt", r"\.lock is a symbolic link"),
    ],
)
def test_a_link_where_the_out_directory_expects_a_directory_or_its_lock_is_refused(
    tmp_path: Path, planted: str, target: str, says: str
) -> None:
    home = victim_home(tmp_path)
    out = tmp_path / "out"
    if planted:
        out.mkdir(mode=0o700)
    (out / planted if planted else out).symlink_to(tmp_path / target)
    with pytest.raises(UsageError, match=says):
        batch_on(tmp_path, out)
    assert untouched(home)


def test_an_out_directory_inside_one_others_can_rename_it_out_of_is_refused_and_a_sticky_one_is_not(
    tmp_path: Path,
) -> None:
    """Whoever can rename what is in a directory above --out could swap --out for their own between the check
    and a later use by path (git, the task's --cwd); /tmp's sticky bit stops that."""
    open_parent = tmp_path / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)
    with pytest.raises(UsageError, match=rf"{open_parent} can be written by other users"):
        OutDir(open_parent / "out").open()
    assert not (open_parent / "out").exists()
    open_parent.chmod(0o1777)
    out = OutDir(open_parent / "out")
    out.open()
    out.close()


def modes(root: Path, skip: Path) -> dict[str, str]:
    """Each file's and directory's permission bits under `root` (not below `skip`)."""
    found: dict[str, str] = {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(top, d) != skip]
        for name in (*dirs, *files):
            path = Path(top, name)
            found[str(path.relative_to(root))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


@pytest.mark.e2e
def test_results_transcripts_logs_summaries_and_pages_are_0600_in_0700_directories(tmp_path: Path) -> None:
    previous = os.umask(0o002)  # a permissive umask: what we make is 0600/0700 whatever it says
    try:
        out = OutDir(tmp_path / "out")
        out.open()
        stream = json.dumps({"type": "result", "result": "done", "session_id": "s1"}) + "\n"
        out.append({"id": "a", "status": "ok", "transcript": "transcripts/a.jsonl"}, stream, "a warning\n")
        out.write_json("summary.json", {"tasks": 1})
        out.close()
        workdir.prepare(None, None, tmp_path / "out", "a")
        write_report(tmp_path / "out")
        write_report(tmp_path / "out", tmp_path / "elsewhere.html")
    finally:
        os.umask(previous)
    found = modes(tmp_path / "out", tmp_path / "out" / "work" / "a")
    assert {"results.jsonl", "transcripts/a.jsonl", "logs/a.stderr", "summary.json", "report.html"} < set(found)
    assert any(name.startswith("report/") and name.endswith(".html") for name in found)
    assert {name: mode for name, mode in found.items() if mode not in ("0o600", "0o700")} == {}
    for name, mode in found.items():
        is_dir = (tmp_path / "out" / name).is_dir()
        assert mode == ("0o700" if is_dir else "0o600"), name
    assert oct(stat.S_IMODE((tmp_path / "elsewhere.html").stat().st_mode)) == "0o600"


def test_an_older_batch_directory_made_0755_with_0644_files_is_tightened_when_resumed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "transcripts").mkdir(parents=True)
    (out / "results.jsonl").write_text(json.dumps({"id": "a", "status": "ok"}) + "\n")
    for path, mode in ((out, 0o755), (out / "transcripts", 0o755), (out / "results.jsonl", 0o644)):
        path.chmod(mode)
    directory = OutDir(out)
    directory.open()
    assert directory.records() == {"a": {"id": "a", "status": "ok"}}
    directory.append({"id": "b", "status": "ok"}, "", "")
    directory.close()
    assert [stat.S_IMODE(p.stat().st_mode) for p in (out, out / "transcripts", out / "results.jsonl")] == [
        0o700,
        0o700,
        0o600,
    ]


@pytest.mark.e2e
def test_a_task_tree_is_deleted_without_following_a_link_in_it_or_in_its_place(tmp_path: Path) -> None:
    home = victim_home(tmp_path)
    work = tmp_path / "out" / "work"
    (work / "a").mkdir(parents=True)
    (work / "a" / "home").symlink_to(home)  # what a task (or anyone before) left in its tree
    (work / "a" / "proj").symlink_to(home / "proj")
    (work / "proj").symlink_to(home / "proj")  # a link in the place of a tree
    assert workdir.prepare(None, None, tmp_path / "out", "a").path == (work / "a").resolve()
    assert workdir.prepare(None, None, tmp_path / "out", "proj").path == (work / "proj").resolve()
    assert untouched(home)
    assert os.listdir(work / "a") == [".git"] and not (work / "proj").is_symlink()


def test_the_rate_gate_and_an_exported_page_never_write_through_a_link(tmp_path: Path) -> None:
    home = victim_home(tmp_path)
    gate = tmp_path / ".rate-gate"
    gate.symlink_to(home / "keep.txt")
    RateGate(gate).close_for(1.0)  # a 429 in a task: fails quietly rather than truncate the link's target
    page = tmp_path / "s1.html"
    page.symlink_to(home / "keep.txt")
    write_file(page, "<html>")
    assert untouched(home)
    assert not page.is_symlink() and page.read_text() == "<html>" and stat.S_IMODE(page.stat().st_mode) == 0o600


def test_private_dir_refuses_a_file_another_user_owns_in_its_place(tmp_path: Path) -> None:
    account = other_account_or_skip()
    with PrivateDir.open(tmp_path / "out") as top:
        (tmp_path / "out" / "results.jsonl").write_text("")
        os.chown(tmp_path / "out" / "results.jsonl", account.uid, account.gid)
        with pytest.raises(Unsafe, match=r"results\.jsonl belongs to another user"):
            top.append("results.jsonl", "planted?\n")


# ---------------------------------------------------------------- a task's prompt is an operand

COMMAND = get_command(app)
OPTIONS = [p for p in COMMAND.params if getattr(p, "opts", None)]
KNOWN = {name for p in OPTIONS for name in (*p.opts, *p.secondary_opts)}
TAKES_VALUE = {name for p in OPTIONS if not getattr(p, "is_flag", False) for name in p.opts}


def parsed(argv: list[str]) -> tuple[dict[str, Any], str | None]:
    """What the task's `sprout-agent` makes of its argv, as argv.run hands it to Typer."""
    rewritten = rewrite(argv, takes_value=TAKES_VALUE, known=KNOWN, commands=set(getattr(COMMAND, "commands", {})))
    ctx = COMMAND.make_context("sprout-agent", rewritten.argv)
    return ctx.params, ctx.meta.get(POSITIONAL)


@pytest.mark.parametrize("prompt", ["--mcp-config", "--output-format", "-p", "--", "mcp", "--help", "-c"])
def test_a_batch_tasks_prompt_that_reads_as_an_option_is_the_prompt_of_its_child(tmp_path: Path, prompt: str) -> None:
    line = {"id": "t", "prompt": prompt, "model": "--mcp-config", "config": ["--x.json"]}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(line) + "\n")
    (task,) = load_tasks(tmp_path / "tasks.jsonl")
    argv = command(Job(task, tmp_path / "out", ("--max-turns", "2")), tmp_path)
    assert argv[-2:] == ["--", prompt] and argv.count("--") == 1 + (prompt == "--")
    params, positional = parsed(argv[3:])  # after `python -m sprout_agent`
    assert positional == prompt and params["print_mode"]
    assert params["mcp_configs"] in (None, ()) and params["output_format"] == "stream-json"
    assert params["model"] == "--mcp-config" and params["config_files"] == [tmp_path / "--x.json"]


def test_with_operands_refuses_options_that_already_end_in_a_double_dash() -> None:
    assert with_operands(["prog", "-x"], ["-y", "--"]) == ["prog", "-x", "--", "-y", "--"]
    with pytest.raises(ValueError, match="would not be operands"):
        with_operands(["prog", "--", "-x"], ["text"])


def merge_in_a_thread(directories: list[Path], out: Path) -> list[BaseException | None]:
    """What `merge` raised (None: nothing), or [] while it still waits (a bounded join: a hang fails the test)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            merge(directories, out)
        except BaseException as error:
            outcome.append(error)
        else:
            outcome.append(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=bounded(20))
    return outcome


@pytest.mark.e2e
def test_merging_a_shard_another_user_made_with_a_fifo_or_links_fails_with_a_message_instead_of_hanging(
    tmp_path: Path,
) -> None:
    """`batch merge` opened a shard's results.jsonl (and transcripts) by path and blocking: another user's FIFO there
    hung it for good; a `transcripts` link was followed."""
    other = other_account_or_skip()
    secret = tmp_path / "mine"
    secret.mkdir()
    (secret / "session.jsonl").write_text("my own transcript\n")
    with shared_directory() as shared:
        script = (
            f'mkdir fifo links && printf \'{{"task_ids": ["a"]}}\' | tee fifo/batch.json > links/batch.json'
            f" && mkfifo fifo/results.jsonl && ln -s {secret} links/transcripts && chmod 755 fifo links"
        )
        other.run(script, shared)
        for shard, why in (("fifo", "a FIFO (named pipe), not a regular file"), ("links", "symbolic link")):
            outcome = merge_in_a_thread([shared / shard], tmp_path / f"merged-{shard}")
            assert outcome, f"merging the {shard} shard hung"
            assert isinstance(outcome[0], UsageError) and why in str(outcome[0]), outcome
        assert not any(tmp_path.glob("merged-*/transcripts/session.jsonl"))
