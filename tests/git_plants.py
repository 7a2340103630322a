"""Repositories planted as a hostile clone would be: each plant names a program in the repository's git config
(or its hooks), and returns a control, plain git run as a user runs it, that does run the program (so a test that
sees nothing run could have seen it)."""

from __future__ import annotations

import os
import pty
import subprocess
from collections.abc import Callable
from pathlib import Path

from sprout_agent.trust import git_runner
from tests.checkpoint_kit import git

FILES: dict[str, str | bytes] = {"a.txt": "one\n", "notes/n.txt": "note\n", "lazy/l.txt": "lazy\n"}


def programs(tmp: Path, marker: Path) -> tuple[Path, Path]:
    """A program that records that it ran, and one that does and passes its input on (a filter)."""
    plain, passing = tmp / "evil", tmp / "evil-filter"
    plain.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\nexit 1\n')
    passing.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    for program in (plain, passing):
        program.chmod(0o755)
    return plain, passing


def plain_git(repo: Path, *args: str, tty: bool = False) -> None:
    """git as a user runs it (no settings of ours), `tty`: its output on a terminal, as a pager wants it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PAGER"}
    if not tty:
        subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, timeout=30, check=False)
        return
    main, terminal = pty.openpty()
    try:
        subprocess.run(["git", *args], cwd=repo, env=env, stdout=terminal, stderr=terminal, timeout=30, check=False)
    finally:
        os.close(main)
        os.close(terminal)


def config(repo: Path, *pairs: tuple[str, str]) -> None:
    for key, value in pairs:
        git(repo, "config", key, value)


def promisor(repo: Path, evil: Path, _filter: Path) -> Callable[[], None]:
    """A sparse index naming a tree the object store lacks, and a promisor remote whose `uploadpack` is a command:
    reading the index fetches the tree lazily, and the fetch runs the command. `protocol.file.allow=always` in the
    repository's config beats a plain `protocol.allow=never`."""
    git(repo, "sparse-checkout", "init", "--cone", "--sparse-index")
    git(repo, "sparse-checkout", "set", "notes")
    tree = git(repo, "rev-parse", "HEAD:lazy").strip()
    (repo / ".git" / "objects" / tree[:2] / tree[2:]).unlink()
    config(repo, ("core.repositoryFormatVersion", "1"), ("extensions.partialClone", "origin"),
           ("remote.origin.url", str(repo.parent / "nowhere")), ("remote.origin.promisor", "true"),
           ("remote.origin.uploadpack", str(evil)), ("protocol.file.allow", "always"))  # fmt: skip
    return lambda: plain_git(repo, "ls-files")


def fsmonitor(repo: Path, evil: Path, _filter: Path) -> Callable[[], None]:
    config(repo, ("core.fsmonitor", str(evil)))
    return lambda: plain_git(repo, "ls-files")


HOOKS = ("reference-transaction", "post-index-change", "post-checkout", "pre-commit", "pre-auto-gc", "post-commit")


def hooks_path(repo: Path, evil: Path, _filter: Path) -> Callable[[], None]:
    named = repo.parent / "named-hooks"
    named.mkdir()
    for directory in (repo / ".git" / "hooks", named):
        for hook in HOOKS:
            (directory / hook).symlink_to(evil)
    config(repo, ("core.hooksPath", str(named)))
    return lambda: plain_git(repo, "update-ref", "refs/heads/planted", "HEAD")


def filter_clean(repo: Path, _evil: Path, passing: Path) -> Callable[[], None]:
    (repo / ".gitattributes").write_text("* filter=x\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    config(repo, ("filter.x.clean", str(passing)), ("filter.x.smudge", str(passing)))

    def control() -> None:
        (repo / "a.txt").write_text("control\n")
        plain_git(repo, "add", "a.txt")

    return control


def diff_external(repo: Path, evil: Path, _filter: Path) -> Callable[[], None]:
    config(repo, ("diff.external", str(evil)))

    def control() -> None:
        (repo / "a.txt").write_text("control\n")
        plain_git(repo, "diff")

    return control


def pager(repo: Path, evil: Path, _filter: Path) -> Callable[[], None]:
    config(repo, ("core.pager", str(evil)), ("pager.ls-files", str(evil)), ("pager.diff", str(evil)))
    return lambda: plain_git(repo, "log", tty=True)


def alias(repo: Path, evil: Path, _filter: Path) -> Callable[[], None]:
    """An alias for every command we run (git never lets one shadow a built-in) and one of a name of its own."""
    config(repo, *((f"alias.{name}", f"!{evil}") for name in (*git_runner.SUBCOMMANDS, "status", "planted")))
    return lambda: plain_git(repo, "planted")


PLANTS = {
    "a_promisor_remote_whose_uploadpack_is_a_command_with_a_sparse_index_missing_a_tree": promisor,
    "a_core_fsmonitor": fsmonitor,
    "a_core_hookspath_and_hooks": hooks_path,
    "a_filter_clean_and_smudge_named_by_gitattributes": filter_clean,
    "a_diff_external": diff_external,
    "a_core_pager": pager,
    "an_alias_for_every_command_we_run": alias,
}
