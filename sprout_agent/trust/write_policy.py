"""Where the model's tools may write: one answer for the write tools in our process and the sandbox's mounts.

Roots are the working directory, its git root (unless that holds the home directory), `--add-dir` and the
allow-write directories; nothing in a read-only sandbox. Inside them these stay read-only:
- every root's git directory as git finds it: `.git` itself (directory, `gitdir:` file or symlink), the
  directory a `gitdir:` file or symlink names, that directory's `commondir`, and what its config points at
  (`core.hooksPath`, included files); the same for the repositories just below a root and the submodules
  the index's gitlinks and `.gitmodules` name (an unpopulated one whole). Git runs code from its config
  (`core.fsmonitor`, filters) and hooks outside any sandbox, at the user's next `git status` or commit;
- the deny list (credential paths such as ~/.ssh, the agent's own data) where the sandbox is active.
A path the user names in allow-write itself stays writable (`--sandbox-allow-write .git`).
The write tools also never write inside any directory named `.git`, existing or not, nor complete a bare
repository (HEAD, objects/, refs/): mounts can only cover what exists, so the sandbox cannot add these rules.
Files read here are opened non-blocking and only when regular (a planted FIFO must not wedge the agent).
Stdlib only.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from sprout_agent.trust.git_index import gitlinks
from sprout_agent.trust.opening import peek, under

READ_ONLY_MODE = "read-only"
ADD_DIRS_ENV = "SPROUT_DEV_ADD_DIRS"  # --add-dir: more directories write and edit may reach (os.pathsep-separated)
ALLOW_OUTSIDE_ENV = "SPROUT_DEV_ALLOW_OUTSIDE"  # 1: the write tools may leave the roots (`anywhere`)
GIT = ".git"


def anybody_may_write(directory: str) -> bool:
    """A directory every local user may write (/tmp, a shared drop): nobody's project. What lies in it (a `.git`, a
    `CLAUDE.md`, a `.claude/`, a `.mcp.json`) may be another user's, planted for whoever works below it."""
    try:
        return bool(os.stat(directory).st_mode & stat.S_IWOTH)
    except OSError:
        return False


def git_root(path: str) -> str | None:
    """The nearest directory at or above `path` holding `.git`, if any; never one at or above a directory anybody
    may write (another user's `/tmp/.git` would make /tmp the project of every directory under it)."""
    current = path
    while not anybody_may_write(current):
        if os.path.lexists(os.path.join(current, GIT)):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


def project_directories(cwd: str) -> list[str]:
    """Where a project's own files are looked for (AGENTS.md, CLAUDE.md, `.claude/`): `cwd` and the directories
    above it up to its git root (`cwd` alone outside git), outermost first; none that anybody may write."""
    if anybody_may_write(cwd):
        return []
    root, chain = git_root(cwd) or cwd, [cwd]
    while chain[-1] != root:
        chain.append(os.path.dirname(chain[-1]))
    return chain[::-1]


def writable_roots(root: str, more: Iterable[str]) -> tuple[str, ...]:
    """The working directory, its git root and `more`: the existing directories writes may land in."""
    found = git_root(root)
    home = os.path.realpath(os.path.expanduser("~"))
    if found is not None and found != root and under(home, found):
        found = None  # a dotfiles repository at ~ would make the whole home directory writable
    return tuple(dict.fromkeys(r for r in (root, found, *more) if r is not None and os.path.isdir(r)))


def git_paths(root: str, submodule: bool = False) -> list[str]:
    """What git reads for the repository at `root`: `.git`, and the directories it points to (a symlink's
    target, a `gitdir:` file's target and that directory's `commondir`), all as real paths. An unpopulated
    submodule (no `.git` yet) is the directory itself: a command could `git init` it and plant a config the
    superproject's `git status` would run."""
    dot = os.path.join(root, GIT)
    if not os.path.lexists(dot):
        return [root] if submodule and os.path.isdir(root) else []
    found = [dot]
    gitdir = os.path.realpath(dot) if os.path.isdir(dot) else _gitdir_of_file(dot)
    if gitdir is not None:
        found.append(gitdir)
        common = _read_pointer(os.path.join(gitdir, "commondir"), "")
        common_dir = os.path.realpath(os.path.join(gitdir, common)) if common is not None else gitdir
        found.append(common_dir)
        found += config_named(root, (os.path.join(gitdir, "config"), os.path.join(common_dir, "config")))
    return list(dict.fromkeys(found))


def config_named(work_tree: str, configs: Iterable[str]) -> list[str]:
    """What a repository's own config points git at that may lie in the work tree: `core.hooksPath` (husky puts
    hooks in `.husky/`) and the files `include.path`/`includeIf.*.path` pull in, one level deep. Read with a
    plain parser: running git here would read the very config in question."""
    found: list[str] = []
    for config in configs:
        text = _read_small(config, 256 * 1024) or ""
        for key, value in _CONFIG_PATH.findall(text):
            value = value.strip().strip('"')
            if not value:
                continue
            base = work_tree if key.lower() == "hookspath" else os.path.dirname(config)
            target = os.path.realpath(os.path.join(base, os.path.expanduser(value)))
            found.append(target)
            if key.lower() == "path":
                found += config_named(work_tree, (target,)) if target not in configs else []
    return found


_CONFIG_PATH = re.compile(r"^\s*(hooksPath|path)\s*=\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)


def nested_repositories(root: str) -> list[str]:
    """The repositories a user's `git` may run in below `root` that are cheap to find: its direct subdirectories
    holding `.git` (a folder of clones) and the submodules `.gitmodules` names (`git status` in the
    superproject runs git in each). Deeper ones are not searched: a tree walk per command costs too much."""
    found: list[str] = []
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        found = [e.path for e in entries if e.is_dir(follow_symlinks=False) and os.path.lexists(e.path + "/.git")]
    named = list(_SUBMODULE_PATH.findall(_read_small(os.path.join(root, ".gitmodules"), 256 * 1024) or ""))
    gitdir = _git_dir(root)
    if gitdir is not None:  # the index's gitlinks: what git status visits, in a file commands cannot write
        named += gitlinks(os.path.join(gitdir, "index"))
    for path in named:
        real = os.path.realpath(os.path.join(root, path.strip()))
        if under(real, root) and real != root:
            found.append(real)
    return list(dict.fromkeys(found))


def _git_dir(root: str) -> str | None:
    dot = os.path.join(root, GIT)
    if os.path.isdir(dot):
        return os.path.realpath(dot)
    return _gitdir_of_file(dot) if os.path.lexists(dot) else None


_SUBMODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)


def _gitdir_of_file(dot: str) -> str | None:
    target = _read_pointer(dot, "gitdir:")
    return None if target is None else os.path.realpath(os.path.join(os.path.dirname(dot), target))


def _read_small(path: str, limit: int) -> str | None:
    """A regular file's first `limit` bytes as text; None for anything else (trust/opening.peek: a FIFO planted as
    `.git` or `.gitmodules` must not block the agent; this runs before every command and write)."""
    data = peek(path, limit)
    return None if data is None else data.decode("utf-8", "replace")


def _read_pointer(path: str, prefix: str) -> str | None:
    """The path a git pointer file holds (`gitdir: X`, or a `commondir` file's bare `X`), if it is one."""
    raw = _read_small(path, 4096)
    if raw is None:
        return None
    text = raw.strip()
    if not text.startswith(prefix):
        return None
    target = text[len(prefix) :].strip()
    return target or None


@dataclass(frozen=True, slots=True)
class WritePolicy:
    """The roots writes may land in and the paths inside them that stay read-only (all real paths)."""

    roots: tuple[str, ...]
    git: tuple[str, ...] = ()  # the roots' git paths (`git_paths`), minus what allow-write names itself
    denied: tuple[str, ...] = ()  # the deny list's paths inside the roots (all of them when `anywhere`)
    anywhere: bool = False  # SPROUT_DEV_ALLOW_OUTSIDE=1: the write tools may leave the roots (not the rest)
    read_only: bool = False  # a read-only sandbox: nothing is writable

    @classmethod
    def build(
        cls,
        *,
        mode: str,
        root: str,
        allow_write: tuple[str, ...] = (),
        add_dirs: tuple[str, ...] = (),
        denied: Iterable[str] = (),
        anywhere: bool = False,
    ) -> WritePolicy:
        roots = writable_roots(root, (*allow_write, *add_dirs))
        git = [path for r in roots for path in git_paths(r)]
        git += [path for r in roots for repo in nested_repositories(r) for path in git_paths(repo, submodule=True)]
        git = [path for path in git if path not in allow_write]
        inside = [path for path in git if any(under(path, r) for r in roots)]
        # Outside the roots too when the write tools may leave them: SPROUT_DEV_ALLOW_OUTSIDE lifts the roots, never
        # the deny list (~/.ssh/authorized_keys was writable with it).
        hidden = [path for path in denied if anywhere or any(under(path, r) for r in roots)]
        read_only = mode == READ_ONLY_MODE
        return cls(() if read_only else roots, tuple(dict.fromkeys(inside)), tuple(hidden), anywhere, read_only)

    @property
    def protected(self) -> tuple[str, ...]:
        return (*self.git, *self.denied)

    def refusal(self, real: str) -> str | None:
        """Why the write tools may not write `real` (a resolved path), or None when they may."""
        if self.read_only:
            return "the sandbox is read-only (--sandbox read-only or --permission-mode read-only)"
        where = next((path for path in self.git if under(real, path)), None) or _git_component(real)
        if where is not None:
            return (
                f"it is inside the git directory {where}, which stays read-only (git runs code from its config and "
                "hooks); ask the user to make this change"
            )
        made = _makes_git_directory(real)
        if made is not None:
            return (
                f"it would make {made} a git directory (HEAD, objects/ and refs/), whose config git would run "
                "code from; ask the user to make this change"
            )
        hidden = next((path for path in self.denied if under(real, path)), None)
        if hidden is not None:
            return f"it is inside {hidden}, which the sandbox's deny list protects (credentials); ask the user"
        if not self.anywhere and not any(under(real, r) for r in self.roots):
            shown = ", ".join(self.roots) or "none"
            return (
                f"it is outside the working directory and the other writable directories ({shown}), after "
                f"resolving '..' and symlinks; set {ALLOW_OUTSIDE_ENV}=1 to allow it"
            )
        return None


def _git_component(real: str) -> str | None:
    """The path up to a `.git` component of `real` (any case: case-insensitive file systems), if it has one."""
    parts = real.split(os.sep)
    index = next((i for i, part in enumerate(parts) if part.lower() == GIT), None)
    return None if index is None else os.sep.join(parts[: index + 1])


def _makes_git_directory(real: str) -> str | None:
    """The directory writing `real` would complete into one git takes as a repository (`HEAD`, `objects/` and
    `refs/`, as git's is_git_directory checks), if any: a bare repository needs no `.git` name."""
    parent = os.path.dirname(real)
    for candidate in dict.fromkeys((parent, os.path.dirname(parent), os.path.dirname(os.path.dirname(parent)))):
        parts = {
            "HEAD": real == os.path.join(candidate, "HEAD") or os.path.lexists(os.path.join(candidate, "HEAD")),
            "objects": under(real, os.path.join(candidate, "objects")) or os.path.isdir(candidate + "/objects"),
            "refs": under(real, os.path.join(candidate, "refs")) or os.path.isdir(candidate + "/refs"),
        }
        if all(parts.values()):
            return candidate
    return None
