"""A SIGKILL in the middle of a checkpoint or a rewind (a real process, killed once an observable says it is
inside the operation): the tree and the store stay consistent, each file is whole (the old bytes or the new),
and the next open finishes an interrupted rewind from its journal (docs/rewind.md). The exact states a kill can
leave are made directly, in-process, in tests/test_checkpoint_store.py; these prove it on a real kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.bounds import bounded
from tests.checkpoint_child import tracker
from tests.checkpoint_kit import git, make_repo
from tests.harness import ROOT, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FILES = 2500


def names() -> list[str]:
    return [f"d{i % 40}/f{i}.txt" for i in range(FILES)]


def before(name: str) -> bytes:
    return f"before {name}\n".encode() * 50


def after(name: str) -> bytes:
    return f"after {name}\n".encode() * 50


def take_turn(repo: Path, store: Path, records: Path, change: Callable[[], object]) -> None:
    from sprout_agent.core.messages import ToolUse
    from sprout_agent.core.protocols import ToolSpec

    async def go() -> None:
        checkpoints = tracker(str(repo), store, records)
        await checkpoints.turn_started("t", [])
        await checkpoints.round_starting(
            [ToolUse("c1", "x__run", {})], {"x__run": ToolSpec("x__run", "x", "run", "", {})}
        )
        change()
        await checkpoints.round_finished()
        await checkpoints.turn_finished()

    anyio.run(go)


def kill_when(action: str, repo: Path, store: Path, records: Path, inside: Callable[[], bool]) -> str:
    """Runs the action in a child and SIGKILLs it as soon as `inside()` holds; what the child printed."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.checkpoint_child", action, str(repo), str(store), str(records)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        anyio.run(wait_until, lambda: inside() or child.poll() is not None, f"the {action} under way", 60)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        out, _ = child.communicate(timeout=bounded(30))
    return out


def test_a_rewind_killed_half_way_leaves_each_file_whole_and_the_next_open_finishes_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {name: before(name) for name in names()})
    store, records = tmp_path / "store", tmp_path / "records.jsonl"
    take_turn(repo, store, records, lambda: [(repo / n).write_bytes(after(n)) for n in names()])
    journal = store / "s1.rewind-journal.json"
    out = kill_when("rewind", repo, store, records, journal.exists)
    assert "done" not in out, "the kill came after the rewind ended: nothing was proved"
    for name in names():
        assert (repo / name).read_bytes() in (before(name), after(name)), name
    anyio.run(tracker(str(repo), store, records).stores)  # the next open
    assert not journal.exists()
    assert all((repo / n).read_bytes() == before(n) for n in names())
    assert git(repo, "status", "--porcelain") == ""  # not one stray temporary file


def test_a_checkpoint_killed_half_way_leaves_the_store_usable(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {name: before(name) for name in names()})
    store, records = tmp_path / "store", tmp_path / "records.jsonl"
    take_turn(repo, store, records, lambda: (repo / "d0" / "f0.txt").write_bytes(after("d0/f0.txt")))
    recorded = git(repo, "rev-parse", "refs/sprout-agent/s1").strip()
    for name in names():
        (repo / name).write_bytes(after(name))
    work = next(p for p in store.iterdir() if p.is_dir())

    def hashing() -> bool:  # the scratch directory of the snapshot's hashing is there
        return any(p.name.startswith("tmp") for p in work.iterdir())

    out = kill_when("snapshot", repo, store, records, hashing)
    assert "done" not in out, "the kill came after the checkpoint ended: nothing was proved"
    assert git(repo, "rev-parse", "refs/sprout-agent/s1").strip() == recorded
    take_turn(repo, store, records, lambda: (repo / "new.txt").write_text("n\n"))  # the next run goes on
    head = git(repo, "rev-parse", "refs/sprout-agent/s1").strip()
    git(repo, "merge-base", "--is-ancestor", recorded, head)  # the chain goes on from the recorded checkpoint
    tree = git(repo, "ls-tree", "-r", "--name-only", head).split("\n")
    assert len([t for t in tree if t]) == FILES + 1
    assert git(repo, "show", f"{head}:d7/f7.txt").encode() == after("d7/f7.txt")
    assert git(repo, "fsck", "--no-dangling", "--connectivity-only") == ""
