"""Each task's own tree: a git worktree of a local repository, a fresh clone of a URL, the task's `cwd` as given,
or an empty repository of its own; and the diff the task left in it. The batch's git calls run no hooks or
fsmonitor, and after a task none of the config the task could write (docs/security.md, Batch)."""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sprout_agent.batch.private import PrivateDir
from sprout_agent.core.processes import die_with_us
from sprout_agent.trust.sandbox import git_root, trusted_which
from sprout_agent.trust.write_policy import GIT_RUNS_NO_HOOKS

GIT_TIMEOUT = 300.0  # a clone of a large repository; every git call is bounded
MAX_DIFF_BYTES = 1 << 20
# A task's repository is named by an untrusted task file, and its tree is written by a model: git must not run
# what their config names. Hooks (post-checkout on worktree add, post-index-change on add), the fsmonitor (any
# index refresh) and `ext::` remote helpers (clone) are switched off here; `-c` beats every config file and
# reaches the git processes git starts itself.
GIT = ("git", *GIT_RUNS_NO_HOOKS, "-c", "protocol.ext.allow=never")  # git itself: trusted_which (never `.`)
# No external diff or textconv program, and no `git status` inside a nested repository the task made (it would
# run that repository's filter drivers).
DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all")


@dataclass(frozen=True, slots=True)
class Tree:
    """Where a task runs. `own`: made here, fresh each run (False: the task's `cwd`, used as it is). `git_dir`:
    what the batch's git calls after the task use, fixed before it ran and outside the tree, since the tree's
    `.git` is the task's to rewrite; None for a scratch tree, where the batch runs no git after the task."""

    path: Path
    own: bool
    git_dir: Path | None = None


def prepare(repo: str | None, cwd: Path | None, out: Path, name: str) -> Tree:
    """The tree the task runs in: `<out>/work/<name>`, and a clone's git directory `<out>/git/<name>`. `out` is
    checked again here (a Ray task may run on another node), and what an earlier run left there is deleted
    through the directory's descriptor, never through a link (private.py)."""
    if cwd is not None:
        return Tree(cwd, own=False)
    with PrivateDir.open(out) as top, top.sub("work") as work, top.sub("git") as gits:
        work.remove(name)
        gits.remove(name)
        tree, git_dir = work.path / name, gits.path / name
        if repo is None:
            work.make_dir(name)
            _scratch(tree)
            return Tree(tree, own=True)
        if Path(repo).is_dir():
            with _locked(Path(repo)):
                _git(["-C", repo, "worktree", "prune"])
                _git(["-C", repo, "worktree", "add", "--detach", "--force", "--", str(tree), "HEAD"])
            return Tree(tree, True, Path(_git(["-C", str(tree), "rev-parse", "--absolute-git-dir"]).strip()))
        _git(["clone", "--quiet", f"--separate-git-dir={git_dir}", "--", repo, str(tree)])
        return Tree(tree, True, git_dir)


@contextmanager
def _locked(repo: Path) -> Generator[None]:
    """One prune-and-add at a time per repository, across threads and processes (Ray workers, array shards). git's
    `worktree add` makes `.git/worktrees/<name>` a moment before it writes the `locked` file that keeps `prune`
    away, and a concurrent prune in that moment deletes the half-made entry: the add then fails."""
    descriptor = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # released with the descriptor, also when we are killed
        yield
    finally:
        os.close(descriptor)


def _scratch(tree: Path) -> None:
    """The empty directory made for the task, made a git repository of its own. The sandbox makes a working
    directory's git root writable: without this, when `--out` lies in a repository, that whole repository
    (results.jsonl and the other tasks' trees with it). Without git, a plain directory is its own root only
    outside every repository: inside one, the task fails rather than run there."""
    try:
        _git(["init", "--quiet", "--", str(tree)])
    except FileNotFoundError:
        above = git_root(str(tree.parent))
        if above is not None:
            raise RuntimeError(
                f"git is needed to keep the task out of the repository {above} (--out is in it)"
            ) from None


def _git(args: list[str], cwd: Path | None = None) -> str:
    program = trusted_which("git", ())
    if program is None:
        raise FileNotFoundError("git is not installed (or only on a relative PATH entry)")
    done = subprocess.run(
        [program, *GIT[1:], *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
        # A URL that asks for credentials fails instead of prompting on the terminal for a task file's host.
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        preexec_fn=die_with_us(),  # a clone does not outlive a batch killed by SIGKILL
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])}…: {done.stderr.strip()[-500:]}")
    return done.stdout


def diff(tree: Tree) -> str | None:
    """`git diff HEAD -- .` of the tree (new files included in our own trees, where marking them intent-to-add
    touches only our index; in a task's own `cwd`, changes to tracked files only); None for a scratch tree, or
    when it is not a git tree with a commit."""
    if tree.own and tree.git_dir is None:
        return None  # a scratch tree: any repository in it, config included, is the task's making
    fixed = [f"--git-dir={tree.git_dir}", f"--work-tree={tree.path}"] if tree.git_dir is not None else []
    try:
        if tree.own:
            _git([*fixed, "add", "--all", "--intent-to-add"], tree.path)
        text = _git([*fixed, "diff", "HEAD", *DIFF_FLAGS, "--", "."], tree.path)
    except (RuntimeError, OSError, subprocess.TimeoutExpired):
        return None
    if len(text.encode()) > MAX_DIFF_BYTES:
        cut = text.encode()[:MAX_DIFF_BYTES].decode(errors="ignore")
        return f"{cut}\n… the diff is over {MAX_DIFF_BYTES} bytes: the rest is in the task's tree\n"
    return text
