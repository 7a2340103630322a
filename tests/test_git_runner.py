"""The one git runner (trust/git_runner.py), attacked as a hostile repository would: each plant in a repository's
git config runs nothing through every path on which the agent runs git itself (a turn's checkpoints, glob, grep,
a rewind, `sessions prune`'s ref deletion, a batch task's worktree and diff), while plain git, given the same
repository, runs it (so every plant is live). Real git, real repositories, the real loop in-process."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from sprout_agent.batch import workdir
from sprout_agent.config.locations import Locations
from sprout_agent.session.checkpointing import forget
from sprout_agent.trust import git_runner
from tests.checkpoint_kit import DEV, Session, git, make_repo
from tests.fake_anthropic import reply, tool_use
from tests.git_plants import FILES, PLANTS, config, programs, promisor


def batch_task(repo: Path, out: Path) -> str | None:
    """A batch task on the repository: its worktree (checkout), the task's change, the batch's diff of it."""
    try:
        tree = workdir.prepare(str(repo), None, out, "t")
    except RuntimeError:
        return None  # git could not make the worktree (the promisor repository's tree is missing)
    (tree.path / "a.txt").write_text("by the task\n")
    return workdir.diff(tree)


@pytest.mark.parametrize("plant", PLANTS.values(), ids=PLANTS.keys())
@pytest.mark.e2e
def test_a_repository_plant_runs_nothing_through_any_git_the_agent_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: Callable[[Path, Path, Path], Callable[[], None]]
) -> None:
    marker = tmp_path / "RAN"
    repo = make_repo(tmp_path / "repo", FILES)
    control = plant(repo, *programs(tmp_path, marker))
    lazy = plant is promisor
    session = Session(tmp_path, monkeypatch, repo, env={**DEV, "SPROUT_DEV_NO_RG": "1"})  # grep lists through git
    run = session.turn(
        reply(tool_use("dev__glob", {"pattern": "**/*.txt"}), tool_use("dev__grep", {"pattern": "one"})),
        reply(tool_use("dev__write", {"file_path": "a.txt", "content": "two\n"})),
        reply(tool_use("dev__bash", {"command": "echo three >> a.txt"})),
    )
    assert run.code == 0
    outcome = session.rewind(1)
    problems = forget(Locations.for_user(), session.id, [str(repo)])
    diff = batch_task(repo, tmp_path / "out")
    assert not marker.exists(), marker.read_text()
    if not lazy:  # each path did run git: the turn was checkpointed, rewound, its ref deleted, the task diffed
        assert outcome.restored == ["a.txt"] and (repo / "a.txt").read_text() == "one\n"
        assert problems == [] and "refs/sprout-agent/" not in git(repo, "for-each-ref")
        assert diff is not None and "+by the task" in diff
    control()
    assert marker.exists(), "plain git runs the plant: the test would see it run"


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "core.fsmonitor=x", "ls-files"],
        ["--exec-path=/tmp", "ls-files"],
        ["--config-env=core.pager=X", "ls-files"],
        ["planted"],  # not a built-in: an alias, or a `git-planted` program on PATH
        ["status"],  # a built-in we do not run
        ["cat-file", "--textconv", "HEAD:a.txt"],
        ["cat-file", "--filters", "HEAD:a.txt"],
        ["hash-object", "-w", "a.txt"],  # without --no-filters: the clean filter
        ["read-tree", "-u", "-m", "HEAD"],  # a checkout: smudge
        ["update-index", "--refresh"],
        ["ls-files", "--modified"],
        [],
    ],
)
@pytest.mark.e2e
def test_the_runner_runs_only_the_built_in_commands_it_knows_and_takes_no_setting_from_a_caller(
    tmp_path: Path, args: list[str]
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    with pytest.raises(git_runner.GitRefused):
        git_runner.run(args, cwd=repo)


@pytest.mark.e2e
def test_git_gets_no_secret_and_none_of_the_callers_git_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "RAN"
    evil, _ = programs(tmp_path, marker)
    repo, other = make_repo(tmp_path / "repo", FILES), make_repo(tmp_path / "other", {"x.txt": "x\n"})
    (repo / "git").write_text(f"#!/bin/sh\necho planted >> {marker}\n")  # found only through `.` on PATH
    (repo / "git").chmod(0o755)
    caller = {"GIT_DIR": str(other / ".git"), "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor={evil}'",
              "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": str(evil),
              "GIT_EXEC_PATH": str(tmp_path), "GIT_SSH_COMMAND": str(evil), "GIT_ASKPASS": str(evil),
              "ANTHROPIC_API_KEY": "sk-ant-api03-secret", "PATH": f".:{os.environ['PATH']}:"}  # fmt: skip
    for name, value in caller.items():
        monkeypatch.setenv(name, value)
    done = git_runner.run(["rev-parse", "--absolute-git-dir"], cwd=repo)
    assert done.returncode == 0 and os.fsdecode(done.stdout).strip() == str(repo / ".git")
    assert git_runner.run(["ls-files"], cwd=repo).stdout.split() == [b"a.txt", b"lazy/l.txt", b"notes/n.txt"]
    assert not marker.exists(), marker.read_text()
    env = git_runner.environment()
    assert "sk-ant-api03-secret" not in str(env) and set(caller).isdisjoint(set(env) - {"PATH"})
    assert all(os.path.isabs(entry) for entry in env["PATH"].split(os.pathsep))
    with pytest.raises(ValueError, match="GIT_DIR"):
        git_runner.environment({"GIT_DIR": str(other / ".git")})


@pytest.mark.e2e
def test_the_users_own_filter_driver_still_runs_where_the_repositorys_are_blanked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's global config (git-lfs's driver) is the user's; a repository's own config is not."""
    marker = tmp_path / "RAN"
    evil, passing = programs(tmp_path, marker)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / ".gitconfig").write_text(f'[filter "user"]\n\tsmudge = {passing} user\n')
    repo = make_repo(tmp_path / "repo", FILES | {".gitattributes": "a.txt filter=user\nnotes/* filter=repo\n"})
    config(repo, ("filter.repo.smudge", f"{evil} repo"), ("filter.repo.required", "true"))
    tree = workdir.prepare(str(repo), None, tmp_path / "out", "t")
    assert (tree.path / "a.txt").read_text() == "one\n" and (tree.path / "notes" / "n.txt").read_text() == "note\n"
    assert marker.read_text().split()[1:] == ["user"]  # (the program's path, then its argument)


@pytest.mark.e2e
def test_a_task_files_ext_url_runs_no_command_at_the_clone_even_where_the_user_allows_every_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "RAN"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / ".gitconfig").write_text("[protocol]\n\tallow = always\n")
    with pytest.raises(RuntimeError, match="transport 'ext' not allowed"):
        workdir.prepare(f"ext::sh -c touch% {marker}", None, tmp_path / "out", "t")
    assert not marker.exists()


@pytest.mark.e2e
def test_a_git_a_command_plants_in_the_working_directorys_venv_never_runs_at_a_checkpoint_rewind_or_prune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandboxed command may write the working directory, an activated venv's bin/ with it: the git found first
    on PATH there would run outside the sandbox at the next checkpoint."""
    marker = tmp_path / "RAN"
    repo = make_repo(tmp_path / "repo", FILES)
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "git").write_text(f'#!/bin/sh\necho planted >> {marker}\nexec /usr/bin/env -i git "$@"\n')
    (bin_dir / "git").chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    assert git_runner.program() != str(bin_dir / "git")  # (before PATH names it)
    session = Session(tmp_path, monkeypatch, repo, env={**DEV, "PATH": path})
    session.turn(reply(tool_use("dev__bash", {"command": "echo two > a.txt"})))
    assert git_runner.program() == str(bin_dir / "git")  # what PATH alone would choose
    assert session.rewind(1).restored == ["a.txt"] and (repo / "a.txt").read_text() == "one\n"
    assert forget(Locations.for_user(), session.id, [str(repo)]) == []
    assert not marker.exists(), marker.read_text()
    assert "refs/sprout-agent/" not in git(repo, "for-each-ref")  # (this git is the planted one: last)
