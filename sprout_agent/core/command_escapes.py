"""Options through which a program an allow rule names would run other programs, or act on another repository:
a `Bash(git:*)` rule never auto-allows a command that uses one (claude_rules.check); it falls to the permission mode.

One table per program (git, find, rg); every other program is matched on its words alone. `escape(argv, start)`
names the first such word at or after `start` (the words before it are the rule's own: the user wrote them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

Finding = tuple[int, str]  # (index in argv, why the word is refused)

RUNS = "makes git run a program of its choosing"
ELSEWHERE = "makes git work on another repository or directory"


@dataclass(frozen=True, slots=True)
class Risky:
    """Options of one git subcommand. git takes any unambiguous abbreviation of a long option (`--exe` for
    `--exec`), and short letters clustered (`-ix`) or glued to their value (`-xmake`)."""

    long: tuple[str, ...] = ()
    short: str = ""
    why: str = RUNS


# git's options before the subcommand that change only its output: any other one is refused, since they are the
# ones that set config (-c, --config-env), pick the programs it runs (--exec-path) or the repository (-C,
# --git-dir, --work-tree, --bare).
GIT_GLOBAL_OK = frozenset(
    {"--no-pager", "-P", "-p", "--paginate", "--no-replace-objects", "--no-lazy-fetch", "--no-optional-locks"}
    | {"--no-advice", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs"}
    | {"--version", "-v", "--help", "-h", "--html-path", "--man-path", "--info-path", "--namespace"}
)
# Global options whose value may be the next word (`-c name=value`): that word is not the subcommand.
GIT_GLOBAL_VALUE = frozenset(
    {"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--attr-source"}
)
# Options that mean the same in every subcommand that has them (diff family, clone/fetch/push, archive, apply).
GIT_EVERYWHERE = (
    Risky(("--ext-diff", "--upload-pack", "--receive-pack", "--exec", "--template")),
    Risky(("--output",), why="makes git write a file anywhere (a hook, a shell profile)"),
    Risky(("--separate-git-dir", "--unsafe-paths"), why=ELSEWHERE),
)
GIT_SUBCOMMAND: dict[str, Risky] = {
    "clone": Risky(("--config",), "uc"),  # -c sets the new repository's config (core.fsmonitor, hooksPath)
    "fetch": Risky((), "u"),
    "pull": Risky((), "u"),
    "ls-remote": Risky((), "u"),
    "archive": Risky(("--remote",), "o", "makes git run a remote's program or write a file anywhere"),
    "rebase": Risky((), "x"),  # -x/--exec CMD after each commit
    "grep": Risky(("--open-files-in-pager",), "O"),
}
# Subcommands that exist to run other programs (or to send mail): never auto-allowed.
GIT_RUNNERS = frozenset({"difftool", "mergetool", "filter-branch", "send-email", "instaweb", "daemon"})
# Subcommand → the action word that runs a command given as arguments (`git bisect run make`).
GIT_RUNNING_ACTIONS = {"bisect": "run", "submodule": "foreach"}
# `git config` is auto-allowed only as a read: config is where git finds the programs it runs (core.fsmonitor,
# core.hooksPath, core.pager, aliases), so an allow rule for git must not let the model set it.
CONFIG_READS = frozenset({"-l", "--list", "get", "list"})
CONFIG_WRITES = Risky(
    ("--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit"),
    "e",
    "writes git's config, where git finds the programs it runs",
)
CONFIG_WRITE_ACTIONS = frozenset({"set", "unset", "rename-section", "remove-section", "edit"})

# find's actions that run programs, delete or write files; find takes no abbreviations.
FIND_ACTIONS = {
    **dict.fromkeys(("-exec", "-execdir", "-ok", "-okdir"), "makes find run a program"),
    "-delete": "makes find delete files",
    **dict.fromkeys(("-fprint", "-fprint0", "-fprintf", "-fls"), "makes find write a file"),
}
RG_OPTIONS = {"--pre": "makes rg run a program on every file it searches"}


def escape(argv: Sequence[str], start: int) -> str | None:
    """Why the command is not covered by a rule naming its first `start` words, or None when it is."""
    scan = PROGRAMS.get(os.path.basename(argv[0])) if argv else None
    if scan is None:
        return None
    found = next((f for f in scan(argv) if f[0] >= start), None)
    return None if found is None else f"{argv[found[0]]!r} {found[1]}"


def _git(argv: Sequence[str]) -> Iterator[Finding]:
    index = 1
    while index < len(argv) and argv[index].startswith("-"):
        word = argv[index]
        if word.split("=", 1)[0] not in GIT_GLOBAL_OK:
            yield index, _global_why(word)
        index += 2 if word in GIT_GLOBAL_VALUE else 1
    if index >= len(argv):
        return
    sub, rest = argv[index], range(index + 1, len(argv))
    if sub in GIT_RUNNERS:
        yield index, "is a git command that runs other programs"
    action = GIT_RUNNING_ACTIONS.get(sub)
    yield from ((i, f"makes git {sub} run a command") for i in rest if argv[i] == action)
    if sub == "config":
        yield from _git_config(argv, index)
    tables = (*GIT_EVERYWHERE, *((GIT_SUBCOMMAND[sub],) if sub in GIT_SUBCOMMAND else ()))
    yield from ((i, table.why) for i in rest for table in tables if _is_option(argv[i], table))


def _global_why(word: str) -> str:
    if word.startswith(("-C", "--git-dir", "--work-tree", "--bare")):
        return ELSEWHERE
    return RUNS if word.startswith(("-c", "--config-env", "--exec-path")) else "is not one of git's harmless options"


def _git_config(argv: Sequence[str], index: int) -> Iterator[Finding]:
    """A `git config` that is not plainly a read (`--get…`, `-l`, `--list`, `get`, `list`) may set config."""
    words = argv[index + 1 :]
    reads = any(w in CONFIG_READS or w.startswith("--get") for w in words)
    for offset, word in enumerate(words, index + 1):
        if word in CONFIG_WRITE_ACTIONS or _is_option(word, CONFIG_WRITES):
            yield offset, CONFIG_WRITES.why
    if not reads:
        yield len(argv) - 1, "may set git's config (only --get, -l/--list, get and list are reads)"


def _is_option(word: str, table: Risky) -> bool:
    """`word` is one of the table's options: a long one or an abbreviation of it, or a short letter in a cluster."""
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        return len(name) > 2 and any(option.startswith(name) for option in table.long)
    return word.startswith("-") and any(letter in word[1:] for letter in table.short)


def _find(argv: Sequence[str]) -> Iterator[Finding]:
    return ((i, FIND_ACTIONS[word]) for i, word in enumerate(argv) if word in FIND_ACTIONS)


def _rg(argv: Sequence[str]) -> Iterator[Finding]:
    return ((i, RG_OPTIONS[name]) for i, word in enumerate(argv) if (name := word.split("=", 1)[0]) in RG_OPTIONS)


PROGRAMS: dict[str, Callable[[Sequence[str]], Iterator[Finding]]] = {"git": _git, "find": _find, "rg": _rg}
