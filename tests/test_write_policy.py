"""One write policy for the write tools (in our process) and the sandbox's mounts (bwrap): the git directory as
git finds it stays read-only for both, the deny list and a read-only sandbox hold for the write tools too, and
a directory swapped for a symlink after the check is never written through."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sprout_agent.trust import sandbox as _sandbox
from sprout_agent.trust.write_policy import WritePolicy, git_paths
from tests.harness import call_tool

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}")
FSMONITOR = "[core]\n\tfsmonitor = touch /tmp/pwned\n"


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


async def write(root: Path, file_path: str, **env: str) -> tuple[bool, str]:
    from mcp import Client

    from sprout_agent.tools import dev

    async with Client(dev.create_server_in(str(root), env)) as client:
        return await call_tool(client, "write", file_path=file_path, content=FSMONITOR)


@pytest.mark.e2e
async def test_the_write_tool_cannot_plant_a_git_hook_or_an_fsmonitor_in_the_repository(root: Path) -> None:
    git_init(root)
    config = (root / ".git" / "config").read_text()
    for target in (".git/hooks/pre-commit", ".git/config", ".git/info/attributes", "sub/../.git/hooks/x"):
        error, text = await write(root, target)
        assert error and "inside the git directory" in text and "stays read-only" in text, (target, text)
    assert (root / ".git" / "config").read_text() == config
    assert not (root / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.e2e
async def test_the_edit_tool_cannot_turn_on_core_fsmonitor(root: Path) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    git_init(root)
    async with Client(dev.create_server_in(str(root), {})) as client:
        await call_tool(client, "read", file_path=".git/config")
        error, text = await call_tool(
            client, "edit", file_path=".git/config", old_string="[core]", new_string="[core]\n\tfsmonitor = x"
        )
    assert error and "git directory" in text and "fsmonitor" not in (root / ".git" / "config").read_text()


async def test_the_write_tool_cannot_make_a_nested_repository_or_a_gitdir_file(root: Path) -> None:
    for target in ("sub/.git/config", "sub/.git", "sub/.GIT/hooks/pre-commit"):
        error, text = await write(root, target)
        assert error and "git directory" in text, (target, text)
    assert not (root / "sub" / ".git").exists()


def linked_worktree(root: Path) -> Path:
    """`root` made a worktree whose `.git` is a `gitdir:` file pointing into a repository inside `root` too."""
    main = root / "store"
    git_init(main)
    subprocess.run(["git", "-C", str(main), "commit", "-q", "--allow-empty", "-m", "m"], check=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@e"})  # fmt: skip
    work = root / "work"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(work)], check=True)
    return work


@pytest.mark.e2e
def test_git_paths_follow_a_gitdir_file_and_its_commondir_as_git_does(root: Path) -> None:
    work = linked_worktree(root)
    found = git_paths(str(work))
    assert found == [str(work / ".git"), str(root / "store/.git/worktrees/work"), str(root / "store/.git")]


@pytest.mark.e2e
async def test_the_write_tools_cannot_write_hooks_through_a_gitdir_file_or_its_commondir(root: Path) -> None:
    work = linked_worktree(root)
    for target in (str(root / "store/.git/worktrees/work/config.worktree"), str(root / "store/.git/hooks/x")):
        error, text = await write(work, target, SPROUT_DEV_ALLOW_OUTSIDE="1")  # even allowed outside the tree
        assert error and "git directory" in text, (target, text)


@needs_bwrap
@pytest.mark.e2e
async def test_a_sandboxed_command_cannot_write_hooks_through_a_gitdir_file_its_commondir_or_a_git_symlink(
    root: Path,
) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    subprocess.run(["git", "init", "-q", "--bare", str(root / ".bare")], check=True)
    (root / ".git").write_text("gitdir: ./.bare\n")  # the bare-repository-with-worktrees layout
    work = linked_worktree(root)  # root/work/.git: a gitdir: file into root/store/.git/worktrees/work
    async with Client(dev.create_server_in(str(root), {})) as client:
        _, text = await call_tool(
            client,
            "bash",
            command="echo x > .bare/hooks/post-checkout; echo x > .bare/config; echo gitdir: /tmp/x > .git; "
            "cd work && echo x > $(git rev-parse --git-common-dir)/hooks/post-checkout; "
            "echo x > $(git rev-parse --git-dir)/config.worktree; echo gitdir: /tmp/x > .git",
        )
    assert "Read-only file system" in text, text
    assert not (root / ".bare/hooks/post-checkout").exists() and (root / ".bare/config").read_text() != "x\n"
    assert (root / ".git").read_text() == "gitdir: ./.bare\n"
    assert not (root / "store/.git/hooks/post-checkout").exists()
    assert not (root / "store/.git/worktrees/work/config.worktree").exists()
    assert "/tmp/x" not in (work / ".git").read_text()
    real = root / "real-git"
    git_init(real)
    (root / "linked").mkdir()
    (root / "linked" / ".git").symlink_to(real / ".git")  # a `.git` symlink: its target is protected
    async with Client(dev.create_server_in(str(root / "linked"), {})) as client:
        _, text = await call_tool(client, "bash", command="echo x > .git/hooks/pre-commit")
    assert not (real / ".git" / "hooks" / "pre-commit").exists(), text


@needs_bwrap
@pytest.mark.e2e
async def test_the_write_tools_and_sandboxed_commands_agree_on_what_may_be_written(root: Path) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    git_init(root)
    git_init(root / "clone")  # a folder of clones: each one's git directory is protected too
    (root / "sub").mkdir()
    targets = ["a.txt", "sub/b.txt", ".git/config", ".git/hooks/pre-push", "clone/.git/config", "clone/x.txt",
               "/etc/sprout-policy-test"]  # fmt: skip
    async with Client(dev.create_server_in(str(root), {})) as client:
        for target in targets:
            tool_error, _ = await call_tool(client, "write", file_path=target, content="x")
            path = target if target.startswith("/") else str(root / target)
            Path(path).unlink(missing_ok=True)
            shell_error, _ = await call_tool(client, "bash", command=f"echo x > {path}")
            Path(path).unlink(missing_ok=True)
            assert tool_error == shell_error, (target, tool_error, shell_error)


async def test_a_read_only_sandbox_refuses_the_write_tools_too(root: Path) -> None:
    error, text = await write(root, "a.txt", SPROUT_DEV_SANDBOX="read-only")
    assert error and "read-only" in text and not (root / "a.txt").exists()


async def test_the_write_tool_cannot_write_a_deny_listed_file_inside_the_working_directory(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout_agent.trust.workspace import Refused, Workspace

    monkeypatch.setenv("HOME", str(root))  # the working directory is the home directory: ~/.bashrc is inside it
    ws = Workspace.from_environment(str(root), {})
    if not ws.sandbox.active():
        pytest.skip("the deny list applies where the sandbox is active")
    with pytest.raises(Refused, match="deny list"):
        ws.writable(".bashrc")


@pytest.mark.e2e
def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_written_through(root: Path) -> None:
    from sprout_agent.trust.opening import Refused, WriteTarget, write_file

    git_init(root)
    (root / "sub").mkdir()
    policy = WritePolicy.build(mode="workspace-write", root=str(root))
    checked = WriteTarget.checked(str(root / "sub" / "pre-commit"), policy)
    (root / "sub").rmdir()
    (root / "sub").symlink_to(root / ".git" / "hooks")  # what a concurrent command could do in between
    with pytest.raises(Refused, match="the path changed after it was checked"):
        write_file(checked, b"#!/bin/sh\ntouch /tmp/pwned\n")
    assert not (root / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.e2e
def test_submodules_named_in_gitmodules_are_protected_but_a_path_leaving_the_root_is_not_followed(root: Path) -> None:
    git_init(root)
    (root / "vendor" / "lib").mkdir(parents=True)
    (root / "vendor" / "lib" / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    (root / ".gitmodules").write_text('[submodule "lib"]\n\tpath = vendor/lib\n[submodule "x"]\n\tpath = ../../etc\n')
    policy = WritePolicy.build(mode="workspace-write", root=str(root))
    assert str(root / "vendor" / "lib" / ".git") in policy.git
    assert policy.refusal(str(root / "vendor" / "lib" / "code.py")) is None
    assert not any(path.startswith("/etc") for path in policy.git)


# ---------------------------------------------------------------- what the attack round found


@pytest.mark.e2e
def test_core_hookspath_and_included_config_in_the_work_tree_stay_read_only(root: Path) -> None:
    git_init(root)
    subprocess.run(["git", "-C", str(root), "config", "core.hooksPath", ".husky"], check=True)
    subprocess.run(["git", "-C", str(root), "config", "include.path", "../.gitconfig"], check=True)
    (root / ".gitconfig").write_text("[user]\n\tname = x\n")
    policy = WritePolicy.build(mode="workspace-write", root=str(root))
    for target in (".husky/pre-commit", ".gitconfig"):  # git runs them at the user's next commit or status
        assert policy.refusal(str(root / target)) is not None, target
    assert policy.refusal(str(root / "src.py")) is None


def test_the_write_tools_cannot_assemble_a_bare_repository_a_later_git_status_would_use(root: Path) -> None:
    policy = WritePolicy.build(mode="workspace-write", root=str(root))
    (root / "docs" / "objects" / "info").mkdir(parents=True)
    (root / "docs" / "refs" / "heads").mkdir(parents=True)
    refused = policy.refusal(str(root / "docs" / "HEAD"))
    assert refused is not None and "git directory" in refused
    (root / "docs" / "HEAD").write_text("ref: refs/heads/main\n")
    assert policy.refusal(str(root / "docs" / "config")) is not None  # its config: core.fsmonitor
    assert policy.refusal(str(root / "notes" / "HEAD")) is None  # a file named HEAD elsewhere is a file


@pytest.mark.e2e
def test_a_fifo_planted_as_a_git_pointer_or_gitmodules_does_not_block_the_policy(root: Path) -> None:
    git_init(root)
    (root / "sub").mkdir()
    os.mkfifo(root / "sub" / ".git")
    os.mkfifo(root / ".gitmodules")
    policy = WritePolicy.build(mode="workspace-write", root=str(root))  # opened non-blocking: returns at once
    assert str(root / ".git") in policy.git


@pytest.mark.e2e
async def test_glob_in_a_directory_whose_git_config_names_a_command_runs_nothing(root: Path, tmp_path: Path) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    mark = tmp_path / "pwned"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    plant = f"""set -e
git init -q sub && cd sub && mkdir -p a d && echo 1 > a/f && echo 2 > d/g && git add -A && git commit -qm x
git config index.sparse true && git sparse-checkout set --cone a >/dev/null 2>&1
t=$(git rev-parse HEAD:d) && rm -f .git/objects/${{t:0:2}}/${{t:2}}
git config core.repositoryformatversion 1 && git config extensions.partialClone origin
git config remote.origin.url /nonexistent && git config remote.origin.promisor true
git config remote.origin.uploadpack 'id > {mark}; false'"""
    subprocess.run(["bash", "-c", plant], cwd=root, env=env, check=True, capture_output=True)
    async with Client(dev.create_server_in(str(root), {})) as client:
        await call_tool(client, "glob", pattern="**", path="sub")  # git ls-files would fetch the missing tree
    assert not mark.exists()


@pytest.mark.e2e
async def test_grep_with_a_glob_of_its_own_still_leaves_the_deny_list_out(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET-KEY\n")
    monkeypatch.setenv("HOME", str(home))
    async with Client(dev.create_server_in(str(root), {})) as client:
        ws_active = _sandbox.probe() is None
        _, text = await call_tool(client, "grep", pattern="SECRET", path=str(home), glob="*")
    if ws_active:
        assert "SECRET-KEY" not in text and "No matches" in text


@pytest.mark.parametrize("index_version", ["2", "4"])
@pytest.mark.e2e
def test_a_submodule_stays_protected_when_unpopulated_or_gitmodules_is_emptied(root: Path, index_version: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    library = root.parent / "library"
    git_init(library)
    subprocess.run(["git", "-C", str(library), "commit", "-q", "--allow-empty", "-m", "m"], check=True, env=env)
    git_init(root)
    add = ["git", "-c", "protocol.file.allow=always", "-C", str(root), "submodule", "add", "-q", str(library)]
    subprocess.run([*add, "vendor/lib"], check=True, env=env, capture_output=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "sub"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "update-index", "--index-version", index_version], check=True)
    (root / ".gitmodules").write_text("")  # a command's first step: the index still names the submodule
    populated = WritePolicy.build(mode="workspace-write", root=str(root))
    assert str(root / "vendor" / "lib" / ".git") in populated.git
    (root / "vendor" / "lib" / ".git").unlink()  # as a clone without --recursive leaves it: an empty directory
    for leftover in (root / "vendor" / "lib").iterdir():
        subprocess.run(["rm", "-rf", str(leftover)], check=True)
    assert not (root / "vendor" / "lib" / ".git").exists() and (root / "vendor" / "lib").is_dir()
    unpopulated = WritePolicy.build(mode="workspace-write", root=str(root))
    assert str(root / "vendor" / "lib") in unpopulated.git  # `git init` there would plant a config
    assert unpopulated.refusal(str(root / "vendor" / "lib" / "config")) is not None
