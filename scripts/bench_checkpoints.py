"""The `checkpoints` group of scripts/bench: what a turn's checkpoints cost on real trees (docs/rewind.md).

The tracker is driven as the loop drives it (turn started, a round that could write, its end, the turn's end) on
a git repository or a plain directory made here; a turn's figure is the tracker's own time, not the change's. The
files are dated an hour back, as a working tree mostly is: a file written in the last 2 s is hashed again at each
checkpoint (git's racy-clean rule), which a fresh tree would otherwise pay for every file.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from sprout_agent.checkpoints.tracker import Tracker, checkpoint_roots
from sprout_agent.core.events import Event
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.protocols import ToolSpec

SPEC = ToolSpec("x__run", "x", "run", "", {})
HOUR_AGO = time.time() - 3600


def make_tree(root: Path, files: int, *, git: bool) -> list[Path]:
    """`files` files of ~200 bytes, 100 to a directory; committed when `git`."""
    paths = [root / f"d{n // 100:04d}" / f"f{n}.txt" for n in range(files)]
    for number, path in enumerate(paths):
        if number % 100 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"line {number}\n" * 20)
        os.utime(path, (HOUR_AGO, HOUR_AGO))
    if git:
        run = {"cwd": root, "check": True, "capture_output": True}
        subprocess.run(["git", "init", "-q"], **run)  # type: ignore[call-overload]
        subprocess.run(["git", "add", "-A"], **run)  # type: ignore[call-overload]
        who = ["-c", "user.name=b", "-c", "user.email=b@b.invalid", "-c", "gc.auto=0"]  # no gc in the background
        subprocess.run(["git", *who, "commit", "-qm", "tree"], **run)  # type: ignore[call-overload]
    return paths


def tracker(root: Path, store: Path, session: str) -> Tracker:
    def emit(event: Event) -> None:
        print(f"    notice: {event}")

    return Tracker(checkpoint_roots(str(root), []), str(root), store, session, emit=emit, write_record=None)


def timed_turn(checkpoints: Tracker, change: Callable[[], object]) -> float:
    """Seconds the tracker spends on one turn with one writing round that runs `change`."""

    async def go() -> float:
        began = time.perf_counter()
        await checkpoints.turn_started("bench", [])
        await checkpoints.round_starting([ToolUse("c", "x__run", {})], {"x__run": SPEC})
        middle = time.perf_counter()
        change()
        resumed = time.perf_counter()
        await checkpoints.round_finished()
        await checkpoints.turn_finished()
        return (middle - began) + (time.perf_counter() - resumed)

    return anyio.run(go)


def size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def turns(files: int, *, git: bool, changed: int, count: int) -> dict[str, Any]:
    """A session of `count` turns each changing `changed` files: the first turn's time (no stat cache yet),
    the later ones', the store's growth per later turn, and the rewind of the last turn and of all of them."""
    with tempfile.TemporaryDirectory() as tmp:
        root, store = Path(tmp) / "tree", Path(tmp) / "store"
        root.mkdir()
        made = time.perf_counter()
        paths = make_tree(root, files, git=git)
        made = time.perf_counter() - made
        checkpoints = tracker(root, store, "s1")
        objects = root / ".git" / "objects" if git else store
        seconds, growth = [], []
        for turn in range(count):
            before = size(objects)
            step = paths[turn * changed : (turn + 1) * changed]
            seconds.append(timed_turn(checkpoints, lambda s=step, t=turn: [p.write_text(f"turn {t}\n") for p in s]))
            growth.append(size(objects) - before)
        unchanged = timed_turn(checkpoints, lambda: None)
        skipped = checkpoints.turns[-2].skipped
        rewind_last, rewind_all = rewind(checkpoints, count), rewind(checkpoints, 1)
        restored = sum(p.read_text().startswith("line ") for p in paths[: count * changed])
    return {
        "made": made, "first": seconds[0], "later": seconds[1:], "growth": growth[1:], "unchanged": unchanged,
        "rewind last": rewind_last, "rewind all": rewind_all, "restored": restored, "skipped": skipped,
    }  # fmt: skip


def rewind(checkpoints: Tracker, turn: int) -> float:
    async def go() -> float:
        began = time.perf_counter()
        plan, _ = await checkpoints.plan_rewind(turn)
        await checkpoints.apply_rewind(plan.restores, plan)
        return time.perf_counter() - began

    return anyio.run(go)


def crowded(new_files: int) -> tuple[float, tuple[str, ...]]:
    """A 1,000-file repository into which a command drops `new_files` untracked files in one directory (a
    dependency tree nobody ignored): the turn's time, and what it skipped."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        make_tree(root, 1000, git=True)
        checkpoints = tracker(root, Path(tmp) / "store", "s1")

        def drop() -> None:
            (root / "node_modules").mkdir()
            for n in range(new_files):
                (root / "node_modules" / f"m{n}.js").write_text("x\n")

        seconds = timed_turn(checkpoints, drop)
        return seconds, checkpoints.turns[-1].skipped


def median(values: list[float]) -> float:
    return statistics.median(values)
