"""Each task's own tree: a git worktree of a local repository (at HEAD, or at a checkout's commit, from a clone made
once per batch if need be), a clone of a URL, the task's `cwd`, or an empty repository; and the diff (or a
checkout's patch) it left. Git runs through trust/git_runner.py: no config of a repository's or the task's runs."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sprout_agent.batch.private import PrivateDir
from sprout_agent.batch.tasks import Checkout, file_name
from sprout_agent.core.processes import die_with_us
from sprout_agent.trust import git_runner
from sprout_agent.trust.sandbox import git_root

GIT_TIMEOUT = 300.0  # a clone of a large repository; every git call is bounded
MAX_DIFF_BYTES = 1 << 20
# No `git status` inside a nested repository the task made (it would read that repository's config). The runner
# adds --no-ext-diff and --no-textconv.
DIFF_FLAGS = ("--no-color", "--ignore-submodules=all")
# A patch another tool applies (`git apply`, `patch -p1`): binary files, renames and modes as git writes them, and
# a/ b/ prefixes at the top whatever the user's config says (diff.noprefix, diff.mnemonicPrefix, diff.relative).
PATCH_FLAGS = ("--binary", "--find-renames", "--src-prefix=a/", "--dst-prefix=b/", "--no-relative")


@dataclass(frozen=True, slots=True)
class Tree:
    """Where a task runs. `own`: made here, fresh each run (False: the task's `cwd`, used as it is). `git_dir`:
    what the batch's git calls after the task use, fixed before it ran and outside the tree, since the tree's
    `.git` is the task's to rewrite; None for a scratch tree, where the batch runs no git after the task."""

    path: Path
    own: bool
    git_dir: Path | None = None


def prepare(repo: str | None, cwd: Path | None, out: Path, name: str, checkout: Checkout | None = None) -> Tree:
    """The tree the task runs in: `<out>/work/<name>`, and a clone's git directory `<out>/git/<name>`. `out` is
    checked again here (a Ray task may run on another node), and what an earlier run left there is deleted
    through the directory's descriptor, never through a link (private.py). With a checkout, the tree is at its
    commit, from `repo` or from the batch's one clone of its URL, `<out>/repos/<owner>__<name>.git`."""
    if cwd is not None:
        return Tree(cwd, own=False)
    with PrivateDir.open(out) as top, top.sub("work") as work, top.sub("git") as gits:
        work.remove(name)
        gits.remove(name)
        tree, git_dir = work.path / name, gits.path / name
        trees = (str(work.path),)  # every task's tree, which its commands may write: no git from a PATH entry there
        if checkout is not None and checkout.clone_url is not None:
            repo = _shared_clone(top, checkout.clone_url, trees)
        if repo is None:
            work.make_dir(name)
            _scratch(tree)
            return Tree(tree, own=True)
        if Path(repo).is_dir():
            # A bare clone (the batch's own, or a mirror the user named) is named as one: the runner's
            # safe.bareRepository=explicit takes no directory for a git directory because it looks like one.
            where = ["-C", repo] if (Path(repo) / ".git").exists() else [f"--git-dir={repo}"]
            with _locked(Path(repo)):
                _git([*where, "worktree", "prune"], trees)
                at = "HEAD" if checkout is None else checkout.commit
                _git([*where, "worktree", "add", "--detach", "--force", "--", str(tree), at], trees)
            return Tree(tree, True, Path(_git(["-C", str(tree), "rev-parse", "--absolute-git-dir"], trees).strip()))
        _git(["clone", "--quiet", f"--separate-git-dir={git_dir}", "--", repo, str(tree)], trees)
        return Tree(tree, True, git_dir)


def _shared_clone(top: PrivateDir, url: str, trees: tuple[str, ...]) -> str:
    """A bare clone of `url` in `<out>/repos`, made by the first task that needs it while the others wait on its
    lock, under a temporary name renamed into place when whole: a batch killed mid-clone leaves no half a clone."""
    name = file_name("__".join(url.removesuffix("/").removesuffix(".git").split("/")[-2:])) + ".git"
    with top.sub("repos") as repos:
        lock = repos.lock_file(f".{name}.lock")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another task's clone holds it at most GIT_TIMEOUT
            try:
                if stat.S_ISDIR(os.stat(name, dir_fd=repos.fd, follow_symlinks=False).st_mode):
                    return str(repos.path / name)
            except FileNotFoundError:
                pass
            repos.remove(name)  # a link or a file where the clone belongs is not followed: it goes
            repos.remove(f"{name}.partial")
            _git(["clone", "--bare", "--quiet", "--", url, str(repos.path / f"{name}.partial")], trees)
            os.rename(f"{name}.partial", name, src_dir_fd=repos.fd, dst_dir_fd=repos.fd)
            return str(repos.path / name)
        finally:
            os.close(lock)


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
        _git(["init", "--quiet", "--", str(tree)], (str(tree.parent),))
    except FileNotFoundError:
        above = git_root(str(tree.parent))
        if above is not None:
            raise RuntimeError(
                f"git is needed to keep the task out of the repository {above} (--out is in it)"
            ) from None


def _git(args: list[str], untrusted: tuple[str, ...], cwd: Path | None = None) -> str:
    """A task's repository is named by an untrusted task file and its tree written by a model: the runner runs
    none of what their config names (hooks at worktree add, the fsmonitor, filter drivers, `ext::` remotes)."""
    # die_with_us: a clone does not outlive a batch killed by SIGKILL. A URL that asks for credentials fails
    # instead of prompting on the terminal for a task file's host (the runner's GIT_TERMINAL_PROMPT=0).
    done = git_runner.run(args, cwd=cwd, timeout=GIT_TIMEOUT, untrusted=untrusted, preexec_fn=die_with_us())
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])}…: {os.fsdecode(done.stderr).strip()[-500:]}")
    return os.fsdecode(done.stdout)


def diff(tree: Tree) -> str | None:
    """`git diff HEAD -- .` of the tree (new files included in our own trees, where marking them intent-to-add
    touches only our index; in a task's own `cwd`, changes to tracked files only), at most MAX_DIFF_BYTES; None
    for a scratch tree, or when it is not a git tree with a commit."""
    return as_text(changes(tree, ("HEAD",)))


def patch(tree: Tree, checkout: Checkout) -> bytes | None:
    """The tree's whole patch against the checkout's commit (new files included, commits the task made too), with
    what the checkout leaves out left out: what `git apply` at that commit turns into the tree."""
    return changes(tree, (*PATCH_FLAGS, checkout.commit), checkout.leave_out)


def changes(tree: Tree, against: tuple[str, ...], leave_out: tuple[str, ...] = ()) -> bytes | None:
    """`git diff AGAINST -- . LEAVE_OUT...` of the tree, through the git directory fixed before the task ran."""
    if tree.own and tree.git_dir is None:
        return None  # a scratch tree: any repository in it, config included, is the task's making
    fixed = [f"--git-dir={tree.git_dir}", f"--work-tree={tree.path}"] if tree.git_dir is not None else []
    writable = tuple(str(p) for p in (tree.path, git_root(str(tree.path))) if p is not None)  # the task's roots
    try:
        if tree.own:
            _git([*fixed, "add", "--all", "--intent-to-add"], writable, tree.path)
        return os.fsencode(_git([*fixed, "diff", *against, *DIFF_FLAGS, "--", ".", *leave_out], writable, tree.path))
    except (RuntimeError, OSError, subprocess.TimeoutExpired):
        return None


def as_text(data: bytes | None) -> str | None:
    """A diff for the record (JSON): a file's bytes that are not UTF-8 replaced, cut at MAX_DIFF_BYTES."""
    if data is None:
        return None
    if len(data) > MAX_DIFF_BYTES:
        cut = data[:MAX_DIFF_BYTES].decode(errors="ignore")
        return f"{cut}\n… the diff is over {MAX_DIFF_BYTES} bytes: the rest is in the task's tree\n"
    return data.decode(errors="replace")
