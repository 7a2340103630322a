"""The loop's `Checkpoints`: a snapshot of every writable root before the first tool round of a turn that could
write, another after each round with a command (so a change is put down to the calls of its round; edit tools
name their files, other tools take what changed since the last checkpoint), and the turn's changes at its end.
A turn whose tools only read costs nothing. Git runs in a worker thread; a failure is one notice."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import anyio.to_thread

from sprout_agent.checkpoints.git_run import CheckpointError, run_git
from sprout_agent.checkpoints.timeline import PROMPT_CHARS, Turn
from sprout_agent.core.errors import StoreError
from sprout_agent.core.events import Event, FileChange, Notice, TurnChanges
from sprout_agent.core.messages import Message, ToolUse
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.trust.write_policy import git_root, under

EDIT_TOOLS = {("dev", "write"), ("dev", "edit")}  # these say which file they change: `file_path`
COMMAND_TOOLS = {("dev", "bash")}  # a round with one of these is checkpointed on its own
if TYPE_CHECKING:  # the store and the rewind load at the first checkpoint, not with every run (start-up)
    from sprout_agent.checkpoints.git_store import Entry, RootStore, Snapshot
    from sprout_agent.checkpoints.rewind import Restore, RewindPlan

Snapshots: TypeAlias = "dict[str, Snapshot]"  # root → snapshot


def checkpoint_roots(cwd: str, more: Sequence[str]) -> list[str]:
    """The writable roots, each widened to its git root (a repository is checkpointed whole, the way the
    sandbox makes it writable), nested ones dropped. A dotfiles repository at ~ is not widened to."""
    home = os.path.realpath(os.path.expanduser("~"))
    roots: list[str] = []
    for directory in (cwd, *more):
        real = os.path.realpath(directory)
        found = git_root(real)
        root = found if found is not None and not under(home, found) else real
        if os.path.isdir(root) and root not in roots:
            roots.append(root)
    return [r for r in roots if not any(r != other and under(r, other) for other in roots)]


def repository_of(root: str, untrusted: tuple[str, ...] = ()) -> str | None:
    """The git directory of a work tree rooted here, or None (a shadow repository is used). `untrusted`: the
    writable roots (no git from a PATH entry in them)."""
    if not os.path.lexists(os.path.join(root, ".git")):
        return None
    try:
        found = os.fsdecode(run_git(["-C", root, "rev-parse", "--absolute-git-dir"], timeout=30, untrusted=untrusted))
    except CheckpointError:
        return None
    return found.strip() or None


class Tracker:
    def __init__(
        self,
        roots: Sequence[str],
        cwd: str,
        store_dir: Path,
        session_id: str,
        *,
        emit: Callable[[Event], None],
        write_record: Callable[[dict[str, object]], int] | None,
        turns: Sequence[Turn] = (),
        private: Sequence[Path] = (),
        read_only: Callable[[], bool] = lambda: False,
    ) -> None:
        self.roots, self.cwd = tuple(roots), os.path.realpath(cwd)
        self.store_dir, self.session_id = store_dir, session_id
        self.emit, self.write_record, self.read_only, self.private = emit, write_record, read_only, tuple(private)
        self.turns: list[Turn] = list(turns)
        self.histories: dict[int, list[Message]] = {}  # turn → the conversation before it (this process's turns)
        self._stores: dict[str, RootStore] | None = None
        self._turn: Turn | None = None
        self._last: Snapshots = {}
        self._rounds: list[tuple[Snapshots, Snapshots, list[tuple[ToolUse, ToolSpec | None]]]] = []
        self._pending: list[tuple[ToolUse, ToolSpec | None]] | None = None  # calls since the last checkpoint

    # --- the loop's Checkpoints ------------------------------------------------------------------------------
    async def turn_started(self, prompt: str, history: Sequence[Message]) -> None:
        number = self.turns[-1].number + 1 if self.turns else 1
        self._turn = Turn(number, time.time(), prompt[:PROMPT_CHARS], 0)
        self._turn.offset = self._record(self._turn.started())
        self.turns.append(self._turn)
        self.histories[number] = list(history)
        self._rounds, self._pending, self._last = [], None, {}

    async def round_starting(self, uses: Sequence[ToolUse], specs: Mapping[str, ToolSpec]) -> None:
        calls = [(use, specs.get(use.name)) for use in uses]
        if self._turn is None or self.read_only() or all(s is not None and s.read_only for _, s in calls):
            return
        if not self._last:
            self._last = await self._snapshot(f"before turn {self._turn.number}")
            if not self._last:
                return
            self._turn.before = {root: snap.commit for root, snap in self._last.items()}
            self._record(self._turn.checkpoint("before"))
        self._pending = [*(self._pending or []), *calls]

    async def round_finished(self) -> None:
        """Only a round with a command is checkpointed on its own, so that its changes are told from the next
        round's: edit tools name their files, and other servers' tools are rarely many to a turn, so the next
        checkpoint (before a command, or the turn's last) puts their changes down to the calls since the last."""
        if self._pending is None or self._turn is None:
            return
        if not any(spec is not None and (spec.server, spec.tool) in COMMAND_TOOLS for _, spec in self._pending):
            return
        calls, self._pending = self._pending, None
        previous = self._last
        now = await self._snapshot(f"turn {self._turn.number}")
        if now:
            self._rounds.append((previous, now, calls))
            self._last = now

    async def turn_finished(self) -> TurnChanges | None:
        turn, self._turn = self._turn, None
        if turn is None or not turn.before:
            return None
        if self._pending is not None:  # edit rounds since the last checkpoint, or a round cut short (Esc)
            previous, calls = self._last, self._pending
            self._pending = None
            if now := await self._snapshot(f"turn {turn.number}"):
                self._rounds.append((previous, now, calls))
                self._last = now
        turn.after = {root: snap.commit for root, snap in self._last.items()}
        try:
            turn.files = await anyio.to_thread.run_sync(self._changes, turn)
        except CheckpointError as error:
            self.emit(Notice(f"checkpoint: {error}", "warning"))
        turn.skipped = tuple(s for snap in self._last.values() for s in snap.skipped)
        self._record(turn.checkpoint("after"))
        return TurnChanges(turn.number, turn.files, turn.skipped)

    # --- rewinding ------------------------------------------------------------------------------------------
    @property
    def journal(self) -> Path:
        return self.store_dir / f"{self.session_id}.rewind-journal.json"

    async def plan_rewind(self, to_turn: int) -> tuple[RewindPlan, dict[str, RootStore]]:
        """What rewinding the files to before `to_turn` would do, against a checkpoint of the tree as it is now
        (which is what a redo goes back to)."""
        from sprout_agent.checkpoints.rewind import plan

        stores = await self.stores()
        current = await anyio.to_thread.run_sync(self.snapshot_all, stores, f"before rewinding to turn {to_turn}")
        return plan(self.turns, to_turn, stores, {r: s.commit for r, s in current.items()}), stores

    async def apply_rewind(self, chosen: Sequence[Restore], plan: RewindPlan) -> tuple[Turn, list[str]]:
        """Puts the chosen files back, as a step of its own in the timeline (so it can be rewound: redo); the
        problems are the files it could not put back."""
        from sprout_agent.checkpoints.rewind import apply

        stores = await self.stores()
        number = self.turns[-1].number + 1 if self.turns else 1
        step = Turn(number, time.time(), f"rewind to turn {plan.turn}", 0, "rewind", dict(plan.current))
        step.offset = self._record(step.started())
        self._record(step.checkpoint("before"))
        self.turns.append(step)
        problems = await anyio.to_thread.run_sync(apply, chosen, stores, self.journal)
        self._rounds = []  # the step's changes are the rewind's, not a tool call's
        after = await anyio.to_thread.run_sync(self.snapshot_all, stores, f"rewound to turn {plan.turn}")
        step.after = {root: snap.commit for root, snap in after.items()}
        step.files = await anyio.to_thread.run_sync(self._changes, step)
        self._record(step.checkpoint("after"))
        return step, problems

    def follow(
        self, session_id: str, write_record: Callable[[dict[str, object]], int] | None, turns: Sequence[Turn]
    ) -> None:
        """The session goes on under a fork (/rewind of the conversation): its turns are the fork's, and the
        stores open again under its ref, chained on its last checkpoints, so the old session's ref stays its own."""
        self.session_id, self.write_record, self.turns = session_id, write_record, list(turns)
        self.histories = {n: h for n, h in self.histories.items() if any(t.number == n for t in self.turns)}
        self._stores, self._last = None, {}

    # --- snapshots ------------------------------------------------------------------------------------------
    async def stores(self) -> dict[str, RootStore]:
        if self._stores is None:
            self._stores = await anyio.to_thread.run_sync(self._open)
        return self._stores

    def _open(self) -> dict[str, RootStore]:
        from sprout_agent.checkpoints.git_store import RootStore
        from sprout_agent.checkpoints.rewind import finish_interrupted

        stores: dict[str, RootStore] = {}
        for root in self.roots:
            try:
                store = RootStore.open(
                    root, self.store_dir, self.session_id, repository=repository_of(root, self.roots),
                    private=self.private, untrusted=self.roots,
                )  # fmt: skip
                if (last := self._last_commit(root)) is not None:
                    store.resume(last)
                stores[root] = store
            except CheckpointError as error:
                self.emit(Notice(f"checkpoint: {error}", "warning"))
        problems = finish_interrupted(self.journal, stores)
        if problems is not None:
            self.emit(Notice("finished a rewind that was interrupted" + "".join(f"; {p}" for p in problems)))
        return stores

    def _last_commit(self, root: str) -> str | None:
        for turn in reversed(self.turns):
            if root in turn.after or root in turn.before:
                return turn.after.get(root) or turn.before[root]
        return None

    async def _snapshot(self, label: str) -> Snapshots:
        stores = await self.stores()
        return await anyio.to_thread.run_sync(self.snapshot_all, stores, label)

    def snapshot_all(self, stores: Mapping[str, RootStore], label: str) -> Snapshots:
        taken: Snapshots = {}
        for root, store in stores.items():
            try:
                taken[root] = store.snapshot(label)
            except CheckpointError as error:
                self.emit(Notice(f"checkpoint of {root} failed: {error}", "warning"))
        return taken

    def _record(self, record: dict[str, object]) -> int:
        if self.write_record is None:
            return 0
        try:
            return self.write_record(record)
        except (OSError, StoreError) as error:
            self.emit(Notice(f"checkpoint: cannot record it: {error}", "warning"))
            return 0

    # --- what a turn changed --------------------------------------------------------------------------------
    def _changes(self, turn: Turn) -> tuple[FileChange, ...]:
        stores = self._stores or {}
        changes: list[FileChange] = []
        for root, before in turn.before.items():
            after = turn.after.get(root, before)
            if after == before or root not in stores:
                continue
            old, new = stores[root].tree(before), stores[root].tree(after)
            counts = stores[root].numstat(before, after)
            for path in sorted(set(old) | set(new)):
                if old.get(path) == new.get(path):
                    continue
                status = "added" if path not in old else "deleted" if path not in new else "modified"
                calls = self._calls_for(root, path)
                added, removed = counts.get(path, (0, 0))
                shown = self.shown(os.path.join(root, path))
                changes.append(FileChange(shown, status, added, removed, *calls))
        return tuple(changes)

    def _calls_for(self, root: str, path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        ids: list[str] = []
        names: list[str] = []
        for previous, now, calls in self._rounds:
            if root not in now or _entry(previous, root, path) == _entry(now, root, path):
                continue
            target = os.path.join(root, path)
            edits = [use for use, spec in calls if _edits(spec) and self._path_of(use) == target]
            others = [use for use, spec in calls if not _edits(spec) and not (spec is not None and spec.read_only)]
            for use in edits or others:
                ids.append(use.id)
                names.append(use.name)
        return tuple(dict.fromkeys(ids)), tuple(dict.fromkeys(names))

    def _path_of(self, use: ToolUse) -> str:
        given = use.input.get("file_path")
        if not isinstance(given, str):
            return ""
        full = os.path.join(self.cwd, os.path.expanduser(given))
        return os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))

    def shown(self, path: str) -> str:
        return os.path.relpath(path, self.cwd) if under(path, self.cwd) else path


def _edits(spec: ToolSpec | None) -> bool:
    return spec is not None and (spec.server, spec.tool) in EDIT_TOOLS


def _entry(snapshots: Snapshots, root: str, path: str) -> Entry | None:
    snap = snapshots.get(root)
    return snap.entries.get(path) if snap is not None else None
