"""Checkpoints and rewind through the real loop: the dev server's edit, write and bash change a real repository or
a plain directory, the turn's checkpoints record what each call changed, and a rewind (from the transcript, as
another process does it) puts it back without touching the user's own work or git state (docs/rewind.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.checkpoint_kit import Session, git, git_state, make_repo, write_files
from tests.fake_anthropic import reply, tool_use

BINARY = bytes(range(256)) * 16


def bash(command: str, id: str) -> dict[str, object]:
    return tool_use("dev__bash", {"command": command}, id=id)


def snapshot_of(root: Path) -> dict[str, bytes | str]:
    """Every file under root except .git, as bytes (a symlink as its target)."""
    found: dict[str, bytes | str] = {}
    for path in root.rglob("*"):
        name = path.relative_to(root).as_posix()
        if name == ".git" or name.startswith(".git/"):
            continue
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_file():
            found[name] = path.read_bytes()
    return found


@pytest.mark.e2e
def test_edit_write_and_bash_changes_are_put_down_to_their_calls_and_all_rewound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files: dict[str, str | bytes] = {"a.txt": "one\n", "b.txt": "x\n", "c.txt": "gone\n", "d.txt": "moved\n"}
    repo = make_repo(tmp_path / "repo", files | {"data.bin": BINARY})
    git(repo, "branch", "other")
    (repo / "b.txt").write_text("stashed\n")
    git(repo, "stash", "-q")
    (repo / "a.txt").write_text("one\nstaged\n")
    git(repo, "add", "a.txt")  # the user's index differs from HEAD: its bytes must survive
    status = git(repo, "status", "--porcelain=v1", "-uall")  # (it refreshes the index: before its bytes are read)
    before, state = snapshot_of(repo), git_state(repo)
    session = Session(tmp_path, monkeypatch, repo)
    edit = {"file_path": "a.txt", "old_string": "one", "new_string": "ONE"}
    write = {"file_path": "new.txt", "content": "n\n"}
    session.turn(
        reply(tool_use("dev__read", {"file_path": "a.txt"})),
        reply(tool_use("dev__edit", edit, id="edit1"), tool_use("dev__write", write, id="write1")),
        reply(bash("sed -i s/x/y/ b.txt && rm c.txt && mv d.txt e.txt && printf '\\0\\1' >> data.bin", "bash1")),
        reply(bash("python3 -c \"open('gen.py','w').write('# generated\\n')\"", "bash2")),
    )  # fmt: skip
    (turn,) = session.turns()
    calls = {change.path: (change.status, change.calls, change.tools) for change in turn.files}
    assert calls == {
        "a.txt": ("modified", ("edit1",), ("dev__edit",)),
        "new.txt": ("added", ("write1",), ("dev__write",)),
        "b.txt": ("modified", ("bash1",), ("dev__bash",)),
        "c.txt": ("deleted", ("bash1",), ("dev__bash",)),
        "d.txt": ("deleted", ("bash1",), ("dev__bash",)),
        "e.txt": ("added", ("bash1",), ("dev__bash",)),
        "data.bin": ("modified", ("bash1",), ("dev__bash",)),
        "gen.py": ("added", ("bash2",), ("dev__bash",)),
    }
    after = snapshot_of(repo)

    outcome = session.rewind(1)
    assert (outcome.conflicts, outcome.problems) == ([], [])
    assert sorted(outcome.restored) == sorted(calls)
    assert "-ONE" in outcome.preview and "+one" in outcome.preview
    assert snapshot_of(repo) == before
    assert git_state(repo) == state
    assert git(repo, "status", "--porcelain=v1", "-uall") == status
    state = git_state(repo)  # that status refreshed the index's record of the files the rewind wrote

    redo = session.rewind(2)  # the rewind is a step of its own: rewinding it puts the turn's work back
    assert (redo.conflicts, redo.problems) == ([], [])
    assert snapshot_of(repo) == after
    assert git_state(repo) == state
    assert session.notices == []


@pytest.mark.e2e
def test_a_git_checkout_of_another_branch_is_rewound_in_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "main\n", "only_main.txt": "m\n"})
    git(repo, "checkout", "-qb", "feature")
    (repo / "app.py").write_text("feature\n")
    (repo / "only_main.txt").unlink()
    write_files(repo, {"only_feature.txt": "f\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "feature")
    git(repo, "checkout", "-q", "main")
    before = snapshot_of(repo)
    session = Session(tmp_path, monkeypatch, repo)
    session.env["SPROUT_AGENT_SANDBOX_ALLOW_WRITE"] = str(repo / ".git")  # git checkout writes HEAD and the index
    session.turn(reply(bash("git checkout -q feature", "checkout")))
    assert git(repo, "branch", "--show-current") == "feature\n"
    (turn,) = session.turns()
    assert {c.path: c.calls for c in turn.files} == {
        "app.py": ("checkout",), "only_main.txt": ("checkout",), "only_feature.txt": ("checkout",),
    }  # fmt: skip
    outcome = session.rewind(1)
    assert (outcome.conflicts, outcome.problems) == ([], [])
    assert snapshot_of(repo) == before
    # The files only: HEAD and the index are the user's git state, never written by a rewind.
    assert git(repo, "branch", "--show-current") == "feature\n"


@pytest.mark.e2e
def test_a_user_edit_is_a_conflict_left_alone_unless_included_and_a_user_file_is_never_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    session = Session(tmp_path, monkeypatch, repo)
    session.turn(
        reply(tool_use("dev__read", {"file_path": "a.txt"}), tool_use("dev__read", {"file_path": "b.txt"})),
        reply(tool_use("dev__write", {"file_path": "a.txt", "content": "agent a\n"}, id="w1")),
        reply(tool_use("dev__write", {"file_path": "b.txt", "content": "agent b\n"}, id="w2")),
    )
    (repo / "a.txt").write_text("user a\n")  # between the turns
    (repo / "mine.txt").write_text("the user's\n")
    session.turn(reply(tool_use("dev__bash", {"command": "echo agent c > c.txt"}, id="w3")))
    (repo / "c.txt").write_text("user c\n")  # after the agent's last write

    outcome = session.rewind(1)
    assert {c.path: c.reason for c in outcome.conflicts} == {
        "a.txt": "changed outside the agent between turns",
        "c.txt": "changed since the agent last wrote it",
    }
    assert outcome.restored == ["b.txt"] and outcome.problems == []
    assert (repo / "a.txt").read_text() == "user a\n" and (repo / "c.txt").read_text() == "user c\n"
    assert (repo / "b.txt").read_text() == "b\n"
    assert (repo / "mine.txt").read_text() == "the user's\n"

    included = session.rewind(1, include=(repo / "c.txt",))
    assert [c.path for c in included.conflicts] == ["a.txt"] and included.restored == ["c.txt"]
    assert (repo / "c.txt").read_text() == "c\n" and (repo / "a.txt").read_text() == "user a\n"
    assert (repo / "mine.txt").read_text() == "the user's\n"


@pytest.mark.e2e
def test_an_edit_between_two_agent_writes_is_a_conflict_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    session = Session(tmp_path, monkeypatch, repo)
    session.turn(reply(tool_use("dev__bash", {"command": "echo agent 1 > a.txt"})))
    (repo / "a.txt").write_text("user\n")
    edit = {"file_path": "a.txt", "old_string": "user", "new_string": "agent 2"}
    session.turn(reply(tool_use("dev__read", {"file_path": "a.txt"})), reply(tool_use("dev__edit", edit)))
    outcome = session.rewind(1, dry_run=True)
    assert [(c.path, c.reason) for c in outcome.conflicts] == [("a.txt", "changed outside the agent between turns")]
    assert (repo / "a.txt").read_text() == "agent 2\n"


@pytest.mark.e2e
def test_a_plain_directory_is_checkpointed_in_a_shadow_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    write_files(work, {"notes.md": "alpha\n", "old.txt": "old\n", "sub/deep.txt": "deep\n", "img.bin": BINARY})
    before = snapshot_of(work)
    session = Session(tmp_path, monkeypatch, work)
    session.turn(reply(bash("sed -i s/alpha/beta/ notes.md && rm old.txt sub/deep.txt && echo new > new.txt", "b")))
    assert {c.path: c.status for c in session.turns()[0].files} == {
        "notes.md": "modified", "old.txt": "deleted", "sub/deep.txt": "deleted", "new.txt": "added",
    }  # fmt: skip
    assert not (work / ".git").exists()
    assert [p.name for p in (session.data / "checkpoints").glob("*/shadow.git")] == ["shadow.git"]
    outcome = session.rewind(1)
    assert (outcome.conflicts, outcome.problems) == ([], [])
    assert snapshot_of(work) == before


@pytest.mark.e2e
def test_untracked_files_are_rewound_and_ignored_ones_never_recorded_nor_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": "*.log\nbuild/\n", "kept.txt": "k\n"})
    write_files(repo, {"scratch.txt": "untracked\n", "app.log": "log\n", "build/out.o": "obj\n"})
    session = Session(tmp_path, monkeypatch, repo)
    session.turn(reply(bash("echo more >> scratch.txt && echo more >> app.log && rm build/out.o && touch x.log", "b")))
    assert {c.path for c in session.turns()[0].files} == {"scratch.txt"}
    outcome = session.rewind(1)
    assert outcome.restored == ["scratch.txt"]
    assert (repo / "scratch.txt").read_text() == "untracked\n"
    assert (repo / "app.log").read_text() == "log\nmore\n" and (repo / "x.log").exists()
    assert not (repo / "build" / "out.o").exists()


@pytest.mark.e2e
def test_symlinks_are_recorded_as_links_and_never_followed_out_of_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    write_files(outside, {"secret.txt": "outside\n"})
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "sub/f.txt": "f\n"})
    (repo / "link").symlink_to("a.txt")
    git(repo, "add", "link")
    git(repo, "commit", "-qm", "link")
    before = snapshot_of(repo)
    session = Session(tmp_path, monkeypatch, repo)
    command = f"ln -sfn {outside}/secret.txt link && rm -r sub && ln -s {outside} sub && ln -s {outside} out"
    session.turn(reply(bash(command, "b")))
    (turn,) = session.turns()
    assert {c.path: c.status for c in turn.files} == {
        "link": "modified", "sub": "added", "sub/f.txt": "deleted", "out": "added",
    }  # fmt: skip
    outcome = session.rewind(1)
    assert (outcome.conflicts, outcome.problems) == ([], [])
    assert snapshot_of(repo) == before
    assert snapshot_of(outside) == {"secret.txt": b"outside\n"}
    assert (repo / "sub").is_dir() and not (repo / "sub").is_symlink()
