"""The checkpoint store's rules on real repositories and directories, through the Tracker without the loop: the
bounds, odd names, what a hostile repository or model could make a checkpoint or a rewind run or write, and a
rewind a kill cut short (docs/rewind.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from sprout_agent.checkpoints.git_store import RootStore
from sprout_agent.checkpoints.rewind import Restore, apply
from sprout_agent.checkpoints.timeline import turns_from
from sprout_agent.checkpoints.tracker import Tracker, checkpoint_roots
from sprout_agent.core.events import Event, Notice, TurnChanges
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.protocols import ToolSpec
from tests.bounds import bounded
from tests.checkpoint_kit import git, make_repo, write_files

SPEC = ToolSpec("x__run", "x", "run", "", {})  # a tool that could write


class Store:
    """A session's tracker over `root`, its records kept in memory (a transcript's stand-in)."""

    def __init__(self, tmp: Path, root: Path, records: list[dict[str, object]] | None = None) -> None:
        self.tmp, self.root, self.notices = tmp, root, list[str]()
        self.records = records if records is not None else []
        self.tracker = self.reopen()

    def reopen(self) -> Tracker:
        """The tracker a new process builds from the records (`-r`, `sessions rewind`)."""

        def emit(event: Event) -> None:
            if isinstance(event, Notice):
                self.notices.append(event.text)

        def record(data: dict[str, object]) -> int:
            self.records.append(data)
            return len(self.records) - 1

        turns = turns_from(enumerate(self.records))
        roots = checkpoint_roots(str(self.root), [])
        self.tracker = Tracker(
            roots, str(self.root), self.tmp / "store", "s1", emit=emit, write_record=record, turns=turns
        )
        return self.tracker

    def turn(self, change: Callable[[], object]) -> TurnChanges | None:
        async def go() -> TurnChanges | None:
            await self.tracker.turn_started("t", [])
            await self.tracker.round_starting([ToolUse("c1", "x__run", {})], {"x__run": SPEC})
            change()
            await self.tracker.round_finished()
            return await self.tracker.turn_finished()

        return anyio.run(go)

    def rewind(self, turn: int, include: tuple[str, ...] = (), edit: Callable[[], object] = lambda: None) -> list[str]:
        """Plans, lets `edit` run (the user, between the preview and the go-ahead), applies: the problems."""

        async def go() -> list[str]:
            plan, _stores = await self.tracker.plan_rewind(turn)
            edit()
            _step, problems = await self.tracker.apply_rewind(plan.chosen(include), plan)
            return problems

        return anyio.run(go)


@pytest.mark.e2e
def test_a_new_tracker_with_the_recorded_turns_continues_the_chain(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "0\n"})
    store = Store(tmp_path, repo)
    store.turn(lambda: (repo / "a.txt").write_text("1\n"))
    first = turns_from(enumerate(store.records))[0].after[str(repo)]
    store.reopen()
    store.turn(lambda: (repo / "a.txt").write_text("2\n"))
    second = turns_from(enumerate(store.records))[1].after[str(repo)]
    assert first in git(repo, "rev-list", second).split()
    assert git(repo, "rev-parse", "refs/sprout-agent/s1").strip() == second
    store.reopen()
    assert store.rewind(1) == [] and (repo / "a.txt").read_text() == "0\n"


@pytest.mark.e2e
def test_a_file_over_the_bound_is_skipped_and_said_and_costs_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    store = Store(tmp_path, repo)
    objects = sum(p.stat().st_size for p in (repo / ".git" / "objects").rglob("*") if p.is_file())

    def grow() -> None:
        with (repo / "big.bin").open("wb") as handle:
            os.truncate(handle.fileno(), 50 * 1024 * 1024)  # sparse: 50 MB that cost no disk
        (repo / "a.txt").write_text("b\n")

    changes = store.turn(grow)
    assert changes is not None and changes.skipped == ("big.bin: over 10 MB",)
    assert [f.path for f in changes.files] == ["a.txt"]
    grown = sum(p.stat().st_size for p in (repo / ".git" / "objects").rglob("*") if p.is_file()) - objects
    assert grown < 64 * 1024


@pytest.mark.e2e
def test_an_unreadable_file_is_skipped_with_a_reason_and_the_rest_is_recorded(tmp_path: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="unreadable-", dir="/tmp"))
    try:
        write_files(work, {"root/ok.txt": "ok\n", "root/locked.txt": "secret\n"})
        (work / "root" / "locked.txt").chmod(0)
        probe = (
            "import json, sys; from pathlib import Path; from sprout_agent.checkpoints.git_store import RootStore;"
            "s = RootStore.open(sys.argv[1], Path(sys.argv[2]), 's', repository=None); snap = s.snapshot('x');"
            "print(json.dumps([sorted(snap.entries), list(snap.skipped)]))"
        )
        command = [sys.executable, "-c", probe, str(work / "root"), str(work / "store")]
        if os.geteuid() == 0:  # root reads anything: the snapshot runs as root without the capabilities that let it
            # (still the owner of this checkout, wherever it lives: a clone under a 0700 directory imports as well)
            command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=bounded(30), cwd="/", env=_child_env())
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == [["ok.txt"], ["locked.txt: unreadable"]]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _child_env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parent.parent)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": root, "HOME": "/nonexistent"}


@pytest.mark.e2e
def test_odd_names_are_recorded_as_themselves_and_put_back(tmp_path: Path) -> None:
    work = tmp_path / "work"
    names = [b"a", b"a\r", b"new\nline", b"\xff\xfe latin-1.txt", b'"quoted"', b"back\\slash", b"tab\there"]
    work.mkdir()
    for name in names:
        (work / os.fsdecode(name)).write_bytes(b"before " + name)
    store = Store(tmp_path, work)
    changes = store.turn(lambda: [(work / os.fsdecode(n)).write_bytes(b"after " + n) for n in names])
    assert changes is not None and sorted(f.path for f in changes.files) == sorted(os.fsdecode(n) for n in names)
    assert store.rewind(1) == []
    assert {n: (work / os.fsdecode(n)).read_bytes() for n in names} == {n: b"before " + n for n in names}


@pytest.mark.e2e
def test_a_sha256_repository_records_deletions(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256")
    write_files(repo, {"a.txt": "a\n", "b.txt": "b\n"})
    store = Store(tmp_path, repo)
    store.turn(lambda: (repo / "b.txt").unlink())
    changes = store.turn(lambda: (repo / "a.txt").unlink())
    assert changes is not None and [(f.path, f.status) for f in changes.files] == [("a.txt", "deleted")]
    assert store.notices == [] and store.rewind(1) == []
    assert sorted(p.name for p in repo.iterdir()) == [".git", "a.txt", "b.txt"]


HOSTILE_CONFIG = """
[core]
    fsmonitor = {evil}
    hooksPath = {hooks}
    pager = {evil}
    splitIndex = true
    untrackedCache = true
[filter "evil"]
    clean = {evil}
    smudge = {evil}
    process = {evil}
[diff "evil"]
    textconv = {evil}
    command = {evil}
[diff]
    external = {evil}
[commit]
    gpgSign = true
[gpg]
    program = {evil}
"""


@pytest.mark.e2e
def test_a_hostile_repository_runs_nothing_and_gets_nothing_in_its_git_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", ".gitattributes": "* filter=evil diff=evil\n"})
    marker = tmp_path / "RAN"
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    evil.chmod(0o755)
    hooks = repo / ".git" / "hooks"
    for hook in ("reference-transaction", "post-index-change", "post-checkout", "pre-commit", "fsmonitor-watchman"):
        shutil.copy(evil, hooks / hook)
    with (repo / ".git" / "config").open("a") as config:
        config.write(HOSTILE_CONFIG.format(evil=evil, hooks=hooks))
    (repo / "git").write_text(f"#!/bin/sh\necho planted >> {marker}\n")  # found only through a relative PATH entry
    (repo / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f".:{os.environ['PATH']}:")
    monkeypatch.chdir(repo)
    listing = sorted(p.name for p in (repo / ".git").iterdir())
    store = Store(tmp_path, repo)
    store.turn(lambda: (repo / "a.txt").write_text("changed\n"))

    async def preview() -> str:
        plan, stores = await store.tracker.plan_rewind(1)
        from sprout_agent.checkpoints.rewind import preview as diff

        return diff(plan, stores, plan.restores)

    assert "+a" in anyio.run(preview)
    assert store.rewind(1) == [] and (repo / "a.txt").read_text() == "a\n"
    assert not marker.exists(), marker.read_text()
    assert sorted(p.name for p in (repo / ".git").iterdir()) == listing  # no sharedindex.*, nothing of ours
    assert store.notices == []


@pytest.mark.e2e
def test_a_rewind_never_writes_through_a_symlinked_directory_nor_leaves_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_files(outside, {"f.txt": "outside\n"})
    work = tmp_path / "work"
    write_files(work, {"sub/f.txt": "inside\n", "x.txt": "x\n"})
    store = RootStore.open(str(work), tmp_path / "store", "s1", repository=None)
    entry = store.snapshot("before").entries["sub/f.txt"]
    shutil.rmtree(work / "sub")
    (work / "sub").symlink_to(outside)  # planted by the model; a rewind that did not delete it
    hostile = ["sub/f.txt", "../outside/f.txt", "/etc/x", ".git/config", "a/../../x", "SUB/.GIT/config"]
    chosen = [Restore(str(work), path, entry) for path in hostile]
    problems = apply(chosen, {str(work): store}, tmp_path / "journal.json")
    assert len(problems) == len(hostile)
    assert "is a symbolic link: not written through" in problems[0]
    assert all("not a path inside the root: refused" in p for p in problems[1:])
    assert (outside / "f.txt").read_text() == "outside\n" and sorted(os.listdir(outside)) == ["f.txt"]
    assert sorted(os.listdir(work)) == ["sub", "x.txt"]


@pytest.mark.e2e
def test_a_file_the_user_saves_after_the_preview_is_left_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    store = Store(tmp_path, repo)
    store.turn(lambda: [(repo / n).write_text("agent\n") for n in ("a.txt", "b.txt")])
    problems = store.rewind(1, edit=lambda: (repo / "a.txt").write_text("user\n"))
    assert problems == [f"{repo}/a.txt: changed since the rewind was planned: left alone"]
    assert (repo / "a.txt").read_text() == "user\n" and (repo / "b.txt").read_text() == "b\n"


@pytest.mark.e2e
def test_a_file_ignored_since_is_a_conflict_and_not_overwritten(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    (repo / "notes.txt").write_text("mine\n")  # untracked: a tracked file stays listed when ignored
    store = Store(tmp_path, repo)
    store.turn(lambda: (repo / ".gitignore").write_text("notes.txt\n"))  # the agent ignores it: "deleted"
    (repo / "notes.txt").write_text("mine, edited since\n")  # invisible to checkpoints now

    async def plan() -> list[tuple[str, str]]:
        found, _ = await store.tracker.plan_rewind(1)
        return [(c.restore.path, c.reason) for c in found.conflicts]

    assert anyio.run(plan) == [("notes.txt", "there, but not in the checkpoint (ignored, or past a bound)")]
    assert store.rewind(1) == []
    assert not (repo / ".gitignore").exists() and (repo / "notes.txt").read_text() == "mine, edited since\n"


@pytest.mark.e2e
def test_a_long_name_is_put_back(tmp_path: Path) -> None:
    work = tmp_path / "work"
    name = "n" * 250
    write_files(work, {name: "before\n"})
    store = Store(tmp_path, work)
    store.turn(lambda: (work / name).write_text("after\n"))
    assert store.rewind(1) == [] and (work / name).read_text() == "before\n"
    assert sorted(os.listdir(work)) == [name]


@pytest.mark.e2e
def test_an_interrupted_rewind_is_finished_at_the_next_open_and_spares_a_file_saved_since(tmp_path: Path) -> None:
    """The state a kill leaves half-way through a rewind: the journal written, one file put back, the temporary
    file of the next one half-written; and then the user saves a third file before the next run."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    store = Store(tmp_path, repo)
    store.turn(lambda: [(repo / n).write_text("agent\n") for n in ("a.txt", "b.txt", "c.txt")])

    async def plan() -> list[Restore]:
        found, _ = await store.tracker.plan_rewind(1)
        return list(found.restores)

    restores = anyio.run(plan)
    journal = store.tracker.journal
    journal.write_text(
        json.dumps([{"root": r.root, "path": r.path, "entry": r.entry, "expected": r.expected} for r in restores])
    )
    (repo / "a.txt").write_text("a\n")  # put back before the kill
    (repo / ".b.txt.sprout-rewind").write_text("b")  # half-written when it came
    (repo / "c.txt").write_text("the user's, after the kill\n")
    store.reopen()
    anyio.run(store.tracker.stores)  # the next run opens the store: that finishes the rewind
    assert not journal.exists()
    assert [n for n in store.notices if "interrupted" in n] == [
        f"finished a rewind that was interrupted; {repo}/c.txt: changed since the rewind was planned: left alone"
    ]
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "b.txt").read_text() == "b\n"
    assert (repo / "c.txt").read_text() == "the user's, after the kill\n"
    assert sorted(p.name for p in repo.iterdir()) == [".git", "a.txt", "b.txt", "c.txt"]


SWAPPER = """
import os, sys
os.chdir(sys.argv[1])
while True:  # `sub` is, in turn, the real directory and a link to the secret one (the model's sandboxed command)
    try:
        os.rename('real', 'sub'); os.rename('sub', 'real'); os.rename('link', 'sub'); os.rename('sub', 'link')
    except OSError:
        pass
"""


@pytest.mark.e2e
@pytest.mark.slow
def test_a_directory_swapped_for_a_link_while_a_checkpoint_hashes_never_puts_the_linked_file_in_a_blob(
    tmp_path: Path,
) -> None:
    """git hashed each file by its path after we had opened it without following a link: in between, `sub` became
    a link to `~/.ssh`, and the key went into a blob under our ref, readable by the model's next `git show`."""
    secret = tmp_path / "ssh"
    write_files(secret, {"id_rsa": "PRIVATE KEY\n"})
    repo = make_repo(tmp_path / "repo", {"README": "r\n"})
    write_files(repo, {"real/id_rsa": "harmless 000000\n"})
    (repo / "link").symlink_to(secret)
    changing = os.open(repo / "real" / "id_rsa", os.O_RDWR)  # rewritten through its descriptor wherever it is
    store = RootStore.open(str(repo), tmp_path / "store", "s1", repository=str(repo / ".git"))
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(repo)])
    hashed = 0
    try:
        for number in range(200):
            os.pwrite(changing, f"harmless {number:06d}\n".encode(), 0)  # changed: hashed again each time
            entry = store.snapshot(f"n{number}").entries.get("sub/id_rsa")
            if entry is not None:
                hashed += 1
                assert b"PRIVATE" not in store.contents([entry[1]])[entry[1]], f"snapshot {number}"
    finally:
        swapper.kill()
        swapper.wait(timeout=bounded(10))
        os.close(changing)
    assert hashed > 3, "the swap never met a checkpoint: nothing was proved"
