"""Each task's own tree: a git worktree of a local repository, a fresh clone of a URL, the task's `cwd` as given,
or an empty directory; and the diff the task left in it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

GIT_TIMEOUT = 300.0  # a clone of a large repository; every git call is bounded
MAX_DIFF_BYTES = 1 << 20


def prepare(repo: str | None, cwd: Path | None, tree: Path) -> tuple[Path, bool]:
    """The directory the task runs in, and whether it is our own tree (made fresh here, so a retry starts clean)."""
    if cwd is not None:
        return cwd, False
    _remove(tree)
    tree.parent.mkdir(parents=True, exist_ok=True)
    if repo is None:
        tree.mkdir()
    elif Path(repo).is_dir():
        _git(["git", "-C", repo, "worktree", "prune"])
        _git(["git", "-C", repo, "worktree", "add", "--detach", "--force", str(tree), "HEAD"])
    else:
        _git(["git", "clone", "--quiet", repo, str(tree)])
    return tree, True


def _remove(tree: Path) -> None:
    if tree.exists() or tree.is_symlink():
        shutil.rmtree(tree, ignore_errors=True)


def _git(args: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])}…: {done.stderr.strip()[-500:]}")
    return done.stdout


def diff(tree: Path, ours: bool) -> str | None:
    """`git diff HEAD -- .` of the tree (new files included in our own trees, where marking them intent-to-add
    touches only our index; in a task's own `cwd`, changes to tracked files only); None when it is not a git tree
    with a commit."""
    if ours and not (tree / ".git").exists():
        return None  # an empty directory of ours: never the diff of a repository the out directory sits in
    try:
        if ours:
            _git(["git", "add", "--all", "--intent-to-add"], tree)
        text = _git(["git", "diff", "HEAD", "--no-color", "--no-ext-diff", "--", "."], tree)
    except (RuntimeError, OSError, subprocess.TimeoutExpired):
        return None
    if len(text.encode()) > MAX_DIFF_BYTES:
        cut = text.encode()[:MAX_DIFF_BYTES].decode(errors="ignore")
        return f"{cut}\n… the diff is over {MAX_DIFF_BYTES} bytes: the rest is in the task's tree\n"
    return text
