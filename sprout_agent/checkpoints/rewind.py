"""Rewinding files to the checkpoint before a turn, without destroying the user's work (docs/rewind.md).

Only paths the agent's turns changed since then are candidates. One the user changed since the agent last did
(by content: the file differs from the agent's last checkpoint of it, or changed between two turns) is a
conflict, left alone unless the caller includes it; so is a file that is there but not in the checkpoint (ignored
now, or past a bound). A file the agent never touched is never written or deleted. Each file is replaced by a
rename (all or nothing per file) and only if it is still as planned (put_back.py); a journal written first lets
a run killed half-way be finished by the next one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from sprout_agent.checkpoints.git_store import CheckpointError, Entry, RootStore
from sprout_agent.checkpoints.put_back import UNCHECKED, put_back
from sprout_agent.checkpoints.timeline import Turn


@dataclass(frozen=True, slots=True)
class Restore:
    root: str
    path: str  # relative to the root
    entry: Entry | None  # what to put back; None: the file did not exist, so it is deleted
    expected: Entry | None = UNCHECKED  # what the plan saw there (None: nothing); UNCHECKED: replaced whatever it is

    @property
    def full(self) -> str:
        return os.path.join(self.root, self.path)


@dataclass(frozen=True, slots=True)
class Conflict:
    restore: Restore
    reason: str


@dataclass(frozen=True, slots=True)
class RewindPlan:
    turn: int
    restores: tuple[Restore, ...]
    conflicts: tuple[Conflict, ...]
    current: Mapping[str, str]  # root → the checkpoint of the tree as it was before the rewind (redo goes back)
    targets: Mapping[str, str] = field(default_factory=dict[str, str])  # root → the checkpoint rewound to

    def chosen(self, include: Collection[str]) -> tuple[Restore, ...]:
        """The restores, and those conflicts whose full path the caller explicitly included."""
        return self.restores + tuple(c.restore for c in self.conflicts if c.restore.full in include)


def plan(
    turns: Sequence[Turn], to_turn: int, stores: Mapping[str, RootStore], current: Mapping[str, str]
) -> RewindPlan:
    """What rewinding the files to before turn `to_turn` would do; `current`: a fresh checkpoint per root."""
    later = [t for t in turns if t.number >= to_turn and t.before]
    restores: list[Restore] = []
    conflicts: list[Conflict] = []
    targets: dict[str, str] = {}
    for root, store in stores.items():
        steps = [t for t in later if root in t.before]
        if not steps or root not in current:
            continue
        targets[root] = steps[0].before[root]
        found = _root_plan(store, steps, current[root])
        restores += found[0]
        conflicts += found[1]
    return RewindPlan(to_turn, tuple(restores), tuple(conflicts), dict(current), targets)


def _root_plan(store: RootStore, steps: Sequence[Turn], now_commit: str) -> tuple[list[Restore], list[Conflict]]:
    root = store.root
    target = store.tree(steps[0].before[root])
    now = store.tree(now_commit)
    agent_last: dict[str, Entry | None] = {}  # path → what the agent's last change of it left
    user_touched: set[str] = set()
    previous_after: Mapping[str, Entry] | None = None
    for step in steps:
        before = store.tree(step.before[root])
        after = store.tree(step.after.get(root, step.before[root]))
        if previous_after is not None:
            user_touched |= _changed(previous_after, before)
        for path in _changed(before, after):
            agent_last[path] = after.get(path)
        previous_after = after
    restores: list[Restore] = []
    conflicts: list[Conflict] = []
    for path in sorted(agent_last):
        want = target.get(path)
        if now.get(path) == want:
            continue  # already as it was
        restore = Restore(root, path, want, now.get(path))
        if now.get(path) is None and os.path.lexists(restore.full):
            conflicts.append(
                Conflict(Restore(root, path, want), "there, but not in the checkpoint (ignored, or past a bound)")
            )
        elif path in user_touched:
            conflicts.append(Conflict(restore, "changed outside the agent between turns"))
        elif now.get(path) != agent_last[path]:
            conflicts.append(Conflict(restore, "changed since the agent last wrote it"))
        else:
            restores.append(restore)
    return restores, conflicts


def _changed(old: Mapping[str, Entry], new: Mapping[str, Entry]) -> set[str]:
    return {p for p in set(old) | set(new) if old.get(p) != new.get(p)}


def preview(plan: RewindPlan, stores: Mapping[str, RootStore], chosen: Sequence[Restore]) -> str:
    """The diff a rewind would apply, from the tree as it is to what it puts back."""
    parts: list[str] = []
    for root, store in stores.items():
        paths = [r.path for r in chosen if r.root == root]
        if paths and root in plan.current and root in plan.targets:
            parts.append(store.patch(plan.current[root], plan.targets[root], paths))
    return "".join(parts)


# --- applying ---------------------------------------------------------------------------------------------
def apply(chosen: Sequence[Restore], stores: Mapping[str, RootStore], journal: Path) -> list[str]:
    """Puts each chosen file back; returns the problems ("path: reason") of those it could not."""
    blobs: dict[str, bytes] = {}
    for root, store in stores.items():
        ids = [r.entry[1] for r in chosen if r.root == root and r.entry is not None]
        blobs |= store.contents(ids)
    _write_journal(journal, chosen)
    problems: list[str] = []
    for restore in chosen:
        try:
            put_back(restore.root, restore.path, restore.entry, restore.expected, blobs)
        except (OSError, KeyError, CheckpointError) as error:
            problems.append(f"{restore.full}: {getattr(error, 'strerror', None) or error}")
    with contextlib.suppress(OSError):
        journal.unlink()
    return problems


def finish_interrupted(journal: Path, stores: Mapping[str, RootStore]) -> list[str] | None:
    """Completes a rewind a kill cut short (None when there was none): putting a file back twice is harmless."""
    try:
        data = json.loads(journal.read_text())
        chosen = [
            Restore(r["root"], r["path"], _entry(r["entry"]), _entry(r.get("expected", list(UNCHECKED)))) for r in data
        ]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        with contextlib.suppress(OSError):
            journal.unlink()
        return ["the journal of an interrupted rewind was unreadable: nothing was put back"]
    known = [r for r in chosen if r.root in stores]
    return apply(known, stores, journal)


def _write_journal(journal: Path, chosen: Sequence[Restore]) -> None:
    data = [{"root": r.root, "path": r.path, "entry": r.entry, "expected": r.expected} for r in chosen]
    journal.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=journal.parent, delete=False) as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(handle.name, journal)


def _entry(value: object) -> Entry | None:
    if value is None:
        return None
    if isinstance(value, list):
        items = [str(v) for v in cast(list[object], value)]
        if len(items) == 2:
            return items[0], items[1]
    raise ValueError(f"not an entry: {value!r}")
