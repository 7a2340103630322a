"""Checkpoints for scripts, in-process: the turn's checkpoint on stream-json's `result`, and `sessions turns`,
`sessions rewind` and `sessions prune` (commands/sessions.py's bodies, called as the CLI calls them) on sessions a
real headless run recorded in a real git repository and in a plain directory."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.errors import EXIT_USAGE
from sprout_agent.faces.cli.commands import session_rewind, sessions
from sprout_agent.session import store
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.fake_sdk import FakeSdk, run_with_sdk
from tests.headless_here import headless
from tests.stream_schema import of_type, stream

DEV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}


def user_line(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}})


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def a_repository(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("print('v1')\n")
    git(path, "add", "app.py")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return path


def two_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, work: Path) -> list[dict[str, Any]]:
    """Turn 1 writes app.py and a new file, turn 2 only reads: their stream-json `result` lines."""
    script = [
        reply(tool_use("dev__read", {"file_path": "app.py"}, id="toolu_r0")),  # dev's write wants a read first
        reply(tool_use("dev__write", {"file_path": "app.py", "content": "print('v2')\n"}, id="toolu_w1")),
        reply(tool_use("dev__write", {"file_path": "new.txt", "content": "a\nb\n"}, id="toolu_w2")),
        reply("Written."),
        reply(tool_use("dev__read", {"file_path": "app.py"}, id="toolu_r1")),
        reply("Read."),
    ]
    options = Options(None, cwd=work, input_format="stream-json", output_format="stream-json")
    stdin = user_line("write them") + "\n" + user_line("read it") + "\n"
    with FakeAnthropic(script) as fake:
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, env=DEV, stdin=stdin)
    assert run.code == 0, run.stderr
    return of_type(stream(run.stdout), "result")


@pytest.mark.e2e
def test_a_turns_result_carries_its_checkpoint_with_the_calls_that_changed_each_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = a_repository(tmp_path / "repo")
    first, second = two_turns(tmp_path, monkeypatch, work)
    checkpoint = first["checkpoint"]
    assert checkpoint["turn"] == 1 and checkpoint["skipped"] == []
    files = {f["path"]: f for f in checkpoint["files_changed"]}
    assert files["app.py"] == {
        "path": "app.py", "status": "modified", "added": 1, "removed": 1, "tool_use_ids": ["toolu_w1"],
        "tools": ["dev__write"],
    }  # fmt: skip
    assert files["new.txt"]["status"] == "added" and files["new.txt"]["tool_use_ids"] == ["toolu_w2"]
    assert (checkpoint["added"], checkpoint["removed"]) == (3, 1)
    assert second["checkpoint"] is None  # a turn whose calls only read takes none
    assert git(work, "status", "--porcelain") == " M app.py\n?? new.txt\n"  # the user's index untouched


def rewind(session: str, turn: int, **flags: Any) -> int:
    given = {"files_only": False, "conversation_only": False, "include": (), "dry_run": False, "as_json": True}
    return session_rewind.rewind_command(session, turn, **(given | flags))


@pytest.mark.e2e
def test_sessions_rewind_puts_the_agents_files_back_and_leaves_the_users_edit_until_included(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = a_repository(tmp_path / "repo")
    session_id = two_turns(tmp_path, monkeypatch, work)[0]["session_id"]
    capsys.readouterr()
    assert sessions.turns_command(session_id[:8], as_json=True) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(t["turn"], t["kind"], t["checkpoint"] is not None) for t in listed] == [
        (1, "turn", True),
        (2, "turn", False),
    ]
    assert listed[0]["checkpoint"]["files_changed"][0]["tool_use_ids"] == ["toolu_w1"]

    (work / "new.txt").write_text("the user's own words\n")  # after the agent wrote it: a conflict
    assert rewind(session_id, 1, files_only=True, dry_run=True) == 5
    dry = json.loads(capsys.readouterr().out)
    assert dry["restored"] == ["app.py"] and "-print('v2')" in dry["preview"] and "+print('v1')" in dry["preview"]
    assert (work / "app.py").read_text() == "print('v2')\n"  # a dry run changes nothing

    sessions_dir = Locations.for_user().sessions
    assert sessions_dir is not None
    held = store.SessionStore.existing(sessions_dir / f"{session_id}.jsonl")  # as a running session holds it
    try:
        with pytest.raises(Exception, match="in use by another sprout-agent run") as refused:
            rewind(session_id, 1, files_only=True)
        assert getattr(refused.value, "exit_code", None) == EXIT_USAGE
    finally:
        held.close()

    assert rewind(session_id, 1, files_only=True) == 5
    done = json.loads(capsys.readouterr().out)
    assert done["conflicts"] == [{"path": "new.txt", "reason": "changed since the agent last wrote it"}]
    assert (work / "app.py").read_text() == "print('v1')\n" and (work / "new.txt").exists()
    assert done["forked_session_id"] is None
    assert rewind(session_id, 1, files_only=True, include=["new.txt"]) == 0
    assert json.loads(capsys.readouterr().out)["restored"] == ["new.txt"] and not (work / "new.txt").exists()
    assert git(work, "status", "--porcelain") == ""  # the tree is the commit again; the user's index untouched

    assert rewind(session_id, 2, conversation_only=True) == 0
    forked = json.loads(capsys.readouterr().out)["forked_session_id"]
    assert sessions.turns_command(forked, as_json=True) == 0
    assert [t["turn"] for t in json.loads(capsys.readouterr().out)] == [1]  # the fork ends where turn 2 began


@pytest.mark.e2e
def test_sessions_prune_removes_old_sessions_with_their_refs_indexes_and_shadow_repositories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = a_repository(tmp_path / "repo")
    plain = tmp_path / "plain"
    plain.mkdir()
    script = [
        reply(tool_use("dev__write", {"file_path": "fresh.py", "content": "x = 1\n"}, id="toolu_a")),
        reply(tool_use("dev__write", {"file_path": str(plain / "notes.txt"), "content": "n\n"}, id="toolu_b")),
        reply("Done."),
    ]
    options = Options("write", cwd=work, add_dirs=(plain,), output_format="json")
    with FakeAnthropic(script) as fake:
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, env=DEV)
    assert run.code == 0, run.stderr
    session_id = json.loads(run.stdout)["session_id"]
    data = Locations.for_user().data
    assert data is not None
    shadows = list((data / "checkpoints").glob("*/shadow.git"))
    assert len(shadows) == 1  # the plain directory's, holding this session's checkpoints
    assert (
        git(plain, f"--git-dir={shadows[0]}", "for-each-ref", "--format=%(refname)")
        == f"refs/sprout-agent/{session_id}\n"
    )
    assert git(work, "for-each-ref", "--format=%(refname)", "refs/sprout-agent/") == f"refs/sprout-agent/{session_id}\n"
    users_refs = git(work, "for-each-ref")
    capsys.readouterr()

    assert sessions.prune_command(older_than_days=1, dry_run=False, as_json=True) == 0
    assert json.loads(capsys.readouterr().out) == []  # not old yet
    assert sessions.prune_command(older_than_days=0, dry_run=True, as_json=True) == 0
    assert [row["session_id"] for row in json.loads(capsys.readouterr().out)] == [session_id]
    assert shadows[0].exists()

    assert sessions.prune_command(older_than_days=0, dry_run=False, as_json=True) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["pruned"] is True and row["problems"] == []
    theirs = "".join(line for line in users_refs.splitlines(True) if "refs/sprout-agent/" not in line)
    assert theirs and git(work, "for-each-ref") == theirs  # ours went, and only ours
    assert not shadows[0].exists() and not list((data / "checkpoints").glob("*/*.index"))
    assert not list((data / "sessions").glob("*.jsonl"))


@pytest.mark.e2e
def test_rewind_files_without_the_sdks_checkpointing_option_is_refused_as_claude_code_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our checkpoints are on, but the SDK did not ask for file checkpointing: Claude Code's answer when it is off
    (an error; a dry run: canRewind false). The replayed message is what the SDK would name."""
    answers: dict[str, Any] = {}

    def script(sdk: FakeSdk) -> None:
        sdk.user("write it")
        echoed = sdk.expect(lambda r: r.get("type") == "user" and r.get("isReplay") is True)
        assert echoed["message"]["content"] == [{"type": "text", "text": "write it"}]
        sdk.expect(lambda r: r.get("type") == "result")
        uuid = echoed["uuid"]
        answers["real"] = sdk.control("r1", "rewind_files", user_message_id=uuid)
        answers["dry"] = sdk.control("r2", "rewind_files", user_message_id=uuid, dry_run=True)

    script_replies = [reply(tool_use("dev__write", {"file_path": "x.txt", "content": "x\n"})), reply("Done.")]
    with FakeAnthropic(script_replies) as fake:
        options = Options(None, replay_user_messages=True)
        code, _sdk, err = run_with_sdk(tmp_path, monkeypatch, script, fake=fake, options=options, env=DEV)
    assert code == 0, err
    assert answers["real"] == {"subtype": "error", "request_id": "r1", "error": "File rewinding is not enabled."}
    assert answers["dry"]["response"] == {"canRewind": False, "error": "File rewinding is not enabled."}
    assert (tmp_path / "work" / "x.txt").exists()
