"""Every git process the agent starts, the one way: git found on PATH's absolute entries, run so that nothing a
repository's config or files name runs a program, in an environment with no secret and none of the caller's GIT_*
variables (docs/security.md, "Git the agent runs itself"). scripts/check_git_runner.py keeps it the only way."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence

from sprout_agent.trust.sandbox import trusted_which
from sprout_agent.trust.secrets import without_secrets

TIMEOUT = 120.0
# Transports by name: `protocol.<name>.allow` beats `protocol.allow`, and a repository's config (or the user's,
# for test suites since CVE-2022-39253) may set `protocol.file.allow=always`. Helpers (`x::`) not named here are
# "user" protocols, which GIT_PROTOCOL_FROM_USER=0 refuses; GIT_NO_LAZY_FETCH stops the fetch before any of them.
_PROTOCOLS = ("file", "git", "http", "https", "ssh", "ext", "fd")
# `-c` beats every config file (the repository's, what it includes, the user's) and reaches the git processes git
# starts itself (GIT_CONFIG_PARAMETERS). What runs a program and is not here needs a command we never run (a
# merge, a push, `log --show-signature`) or a transport, which `_NO_TRANSPORT` closes.
_SAFE = (
    ("core.hooksPath", "/dev/null"),  # no hook, from .git/hooks or from where the config points
    ("core.fsmonitor", "false"),  # a program run at every index read
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("commit.gpgSign", "false"),  # gpg.program
    ("tag.gpgSign", "false"),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),  # no `gc --auto` (and its hook) after a command that writes
    ("maintenance.auto", "false"),
    ("safe.bareRepository", "explicit"),  # a directory that merely looks like a git directory is not one
    ("core.quotePath", "false"),  # names as they are: callers parse them
    ("core.splitIndex", "false"),  # no sharedindex.* written into a user's git directory
)
# A partial clone's lazy fetch runs `remote.<name>.uploadpack` (a shell command), an ssh or a remote helper.
_NO_TRANSPORT = (("protocol.allow", "never"), *((f"protocol.{name}.allow", "never") for name in _PROTOCOLS))
# A clone (batch's `repo` URL) is the one command that fetches: the user's own transports, never `ext::`/`fd::`.
_CLONE_TRANSPORT = (("protocol.ext.allow", "never"), ("protocol.fd.allow", "never"))
_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_LAZY_FETCH": "1",  # the same switch as `--no-lazy-fetch`, which git before 2.44 refuses as an option
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_NO_REPLACE_OBJECTS": "1",  # a repository's refs/replace/ must not change what a snapshot's ids read as
}
# The only GIT_* variables a caller may set: where a private index is, and who a checkpoint's commit is by.
CALLER_ENV = frozenset(
    {"GIT_INDEX_FILE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}
)
# Git never lets an alias shadow a built-in command, so naming only built-ins means no alias ever runs.
SUBCOMMANDS = frozenset(
    {"add", "cat-file", "clone", "commit-tree", "diff", "diff-tree", "for-each-ref", "hash-object", "init",
     "ls-files", "ls-tree", "read-tree", "rev-parse", "show-ref", "update-index", "update-ref", "worktree",
     "write-tree"}
)  # fmt: skip
# Those that read or write work-tree files through .gitattributes, so through a filter driver (`clean` when a
# file is hashed, `smudge` at a checkout): the repository's own drivers are blanked for them (`_drivers_off`).
_CONVERTING = frozenset({"add", "diff", "worktree"})
_DIFFS = frozenset({"diff", "diff-tree"})  # diff.external, diff.<driver>.command and .textconv are programs
# Options that would read or write work-tree contents through a filter driver where the command otherwise does not.
_REFUSED = {
    "cat-file": ("--filters", "--textconv", "--path"),
    "read-tree": ("-u",),  # a checkout: smudge
    "update-index": ("--add", "--refresh", "--really-refresh", "--again"),  # hashing a file: clean
    "ls-files": ("-m", "--modified"),  # a racily clean file is compared by content: clean
}


class GitRefused(OSError):
    """A git command the runner will not start: one that could run a program it cannot switch off."""


def program(untrusted: tuple[str, ...] = ()) -> str:
    """git's absolute path, from PATH's absolute entries outside `untrusted` (what sandboxed commands may write):
    with `.` on PATH, a `git` the model planted would run outside every sandbox."""
    found = trusted_which("git", untrusted)
    if found is None:
        raise FileNotFoundError("git is not installed (or only reachable through a relative PATH entry)")
    return found


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without secrets, without every GIT_* variable (GIT_DIR, GIT_CONFIG_*,
    GIT_EXEC_PATH, GIT_SSH*, GIT_ASKPASS ... redirect git or name programs), PATH's relative entries dropped, and
    ours added."""
    extra = dict(extra or {})
    if unknown := sorted(name for name in extra if name.startswith("GIT_") and name not in CALLER_ENV):
        raise ValueError(f"the git runner sets {', '.join(unknown)} itself or never")
    env = {k: v for k, v in without_secrets(os.environ).items() if not k.startswith("GIT_")}
    env["PATH"] = os.pathsep.join(e for e in env.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(e))
    return env | _ENV | extra


def run(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT,
    untrusted: tuple[str, ...] = (),
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.CompletedProcess[bytes]:
    """`git <args>` with the safe settings, bytes out (a name's carriage return survives). `args`: `-C DIR`,
    `--git-dir=`, `--work-tree=` if any, then one of SUBCOMMANDS and its arguments. `pass_fds`: descriptors git
    reads as `/proc/self/fd/N` (files opened by trust/opening.py, never a path git would resolve again). Raises
    OSError (GitRefused, FileNotFoundError) and subprocess.TimeoutExpired; a non-zero exit is the caller's to read."""
    where, command, rest = _split(args)
    git, child_env = program(untrusted), environment(env)
    settings = [*_SAFE, *(_CLONE_TRANSPORT if command == "clone" else _NO_TRANSPORT)]
    if command == "clone":
        del child_env["GIT_PROTOCOL_FROM_USER"]  # a task file's `file://` URL is the user's to clone
    if command in _CONVERTING:
        settings += _drivers_off([git, *_flags(settings), *where], cwd, child_env, timeout)
    if command in _DIFFS:
        rest = ["--no-ext-diff", "--no-textconv", *rest]
    return subprocess.run(
        [git, *_flags(settings), *where, command, *rest], cwd=cwd, input=stdin, capture_output=True, env=child_env,
        timeout=timeout, check=False, stdin=subprocess.DEVNULL if stdin is None else None, preexec_fn=preexec_fn,
        pass_fds=tuple(pass_fds),
    )  # fmt: skip


def _split(args: Sequence[str]) -> tuple[list[str], str, list[str]]:
    """(global options, subcommand, its arguments); anything else is refused, `-c` first: settings are ours."""
    where: list[str] = []
    index = 0
    while index < len(args) and args[index].startswith("-"):
        option = args[index]
        if option == "-C" and index + 1 < len(args):
            where += [option, args[index + 1]]
            index += 2
        elif option.startswith(("--git-dir=", "--work-tree=")):
            where.append(option)
            index += 1
        else:
            raise GitRefused(f"git option {option!r} is not one the runner passes")
    if index == len(args) or args[index] not in SUBCOMMANDS:
        raise GitRefused(f"git {args[index] if index < len(args) else '(nothing)'} is not a command the runner runs")
    command, rest = args[index], list(args[index + 1 :])
    if refused := [a for a in rest if a.split("=", 1)[0] in _REFUSED.get(command, ())]:
        raise GitRefused(f"git {command} {refused[0]} could run a repository's filter or textconv program")
    if command == "hash-object" and "--no-filters" not in rest:
        raise GitRefused("git hash-object without --no-filters runs a repository's clean filter")
    return where, command, rest


def _flags(settings: Sequence[tuple[str, str]]) -> list[str]:
    return [flag for key, value in settings for flag in ("-c", f"{key}={value}")]


def _drivers_off(
    git: list[str], cwd: str | os.PathLike[str] | None, env: Mapping[str, str], timeout: float
) -> list[tuple[str, str]]:
    """Blank settings for every filter driver the repository's own config (or a file it includes) defines: their
    names come from .gitattributes, which a model or a repository writes, so they cannot be listed ahead; the user's
    global drivers (git-lfs) stay. An empty `clean`/`smudge`/`process` is git's "no filter"."""
    listed = subprocess.run(
        [*git, "config", "--null", "--show-scope", "--get-regexp", r"^filter\."], cwd=cwd, capture_output=True,
        env=env, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if listed.returncode not in (0, 1):  # 1: none set
        raise GitRefused(f"cannot list the repository's filter drivers: {os.fsdecode(listed.stderr).strip()[-300:]}")
    fields = os.fsdecode(listed.stdout).split("\0")
    names: set[str] = set()
    for scope, entry in zip(fields[::2], fields[1::2], strict=False):
        key = entry.split("\n", 1)[0]
        if scope != "global" and key.count(".") >= 2:
            names.add(key[len("filter.") : key.rindex(".")])
    if bad := [n for n in names if "=" in n]:  # `-c` splits at the first `=`: such a name cannot be blanked
        raise GitRefused(f"the repository defines a filter driver git cannot be told to skip: {bad[0]!r}")
    parts = ("clean", "smudge", "process")
    return [(f"filter.{n}.{part}", "") for n in sorted(names) for part in parts] + [
        (f"filter.{n}.required", "false") for n in sorted(names)
    ]
