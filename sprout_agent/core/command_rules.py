"""What a `Bash(prog:*)` rule covers for a program we know: the grammar of its tables (command_tables.py) and the
walk that finds the first word of a command no table row allows. Everything not on a row is not covered.

A row lists what a command may take; a word it does not list keeps the command out of the rule (claude_rules.check),
so the command falls to the permission mode: asked, or refused where nobody can be asked.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["", "=", "?"]  # no value; a value (glued or the next word); a value only when glued (`--x=v`, `-xv`)
Finding = tuple[int, str]  # (index in argv, why the word keeps the command out)
ANY = r".*"
NONE = r"(?!)"  # a row whose commands take no argument words: `git remote -v add x` is not `git remote -v`


@dataclass(frozen=True, slots=True)
class Options:
    """The options one command takes: `allowed` ones a rule covers, and `refused` ones we know (with why), so that a
    refusal names the reason and a rule that itself names one (`Bash(git -C sub status:*)`) is read right."""

    allowed: Mapping[str, Kind] = field(default_factory=dict[str, Kind])
    refused: Mapping[str, tuple[Kind, str]] = field(default_factory=dict[str, tuple[Kind, str]])
    numbers: bool = False  # `-5` is an option (git log's count)

    def kind(self, name: str) -> tuple[Kind, str | None] | None:
        """How the option takes a value and why it is refused (None: allowed); None for an option we do not know."""
        if name in self.allowed:
            return (self.allowed[name], None)
        return self.refused.get(name)


def opts(allowed: str = "", refused: Mapping[str, str] | None = None, *, numbers: bool = False) -> Options:
    """`"-a --all -m= --message= -U? --stat?"`: a bare name takes no value, `=` a value, `?` a value only glued.
    `refused` maps such names to why: `{"--exec=": "runs a program"}`; a name the row allows is its own (pip show's
    `-f` is `--files`, not the `--find-links` pip refuses elsewhere)."""
    listed = _names(allowed)
    known: dict[str, tuple[Kind, str]] = {
        n: (k, why) for spec, why in (refused or {}).items() for n, k in _names(spec).items() if n not in listed
    }
    return Options(listed, known, numbers)


@functools.cache  # the tables repeat their groups (pip's general options on every row): read each once
def _names(spec: str) -> Mapping[str, Kind]:
    return {token.rstrip("=?"): _KINDS.get(token[-1], "") for token in spec.split()}


_KINDS: dict[str, Kind] = {"=": "=", "?": "?"}


def merge(*parts: Options) -> Options:
    """One row's options from shared groups (the diff options of diff, log, show and stash show)."""
    return Options(
        {k: v for part in parts for k, v in part.allowed.items()},
        {k: v for part in parts for k, v in part.refused.items()},
        any(part.numbers for part in parts),
    )


@dataclass(frozen=True, slots=True)
class Command:
    """One row: a subcommand (or a whole program) a rule may cover, and what it may take."""

    options: Options
    why: str  # what it does and why it runs no program of the model's choosing (the docs show it)
    named_only: bool = False  # covered only by a rule that names it (`Bash(git push:*)`), never by `Bash(git:*)`
    args: str = ANY  # the words that are not options must match this (make's targets: no `VAR=value`)
    requires: frozenset[str] = frozenset()  # one of these options must be given (git config: a read)
    after: frozenset[str] = frozenset()  # one of these must come before the row's words (python -I -m pip)
    then: Program | None = None  # `python -m pip …` goes on as pip's table


@dataclass(frozen=True, slots=True)
class Program:
    """A program's table: options before its subcommand, and its rows by their words (`("stash", "list")`)."""

    name: str
    globals: Options
    commands: Mapping[tuple[str, ...], Command]
    bare: Command | None = None  # the row for a program without subcommands (find, rg, make)
    clusters: bool = True  # `-ab` is `-a -b`, `-mfix` is `-m fix` (getopt, git's parse-options); find: no
    end: frozenset[str] = frozenset({"--"})  # words after which every word is an argument

    def key_at(self, argv: Sequence[str], index: int) -> tuple[str, ...] | None:
        """The longest row name starting at argv[index], if any."""
        for size in (3, 2, 1):
            key = tuple(argv[index : index + size])
            if len(key) == size and key in self.commands:
                return key
        return None


def uncovered(program: Program, argv: Sequence[str], start: int) -> str | None:
    """Why the command is not covered by a rule naming its first `start` words (those are the user's: a rule may
    name an option or a subcommand of its choosing), or None when it is."""
    found = next((f for f in walk(program, argv, 1) if f[0] >= start), None)
    return None if found is None else f"{argv[found[0]]!r} {found[1]}"


def walk(program: Program, argv: Sequence[str], index: int) -> Iterator[Finding]:
    """Every word no row allows, in order. A word we do not know ends the walk: what follows cannot be read (for a
    rule that names it, that is "matched on its words alone")."""
    # A program without subcommands reads all its options as its one row's (find's `-H` and `-name` alike).
    before: set[str] = set()
    while program.bare is None and index < len(argv) and _is_option(argv[index]) and not program.key_at(argv, index):
        width, why = _option(program.globals, argv, index, program.clusters, before)
        if why is not None:
            yield (index, why)
        if width == 0:
            return
        index += width
    if index == len(argv):
        return
    key = program.key_at(argv, index)
    if key is None and program.bare is None:
        yield (index, f"is not a {program.name} subcommand any rule covers unless it names it")
        return
    command = program.commands[key] if key is not None else program.bare
    assert command is not None
    if key is not None:
        index += len(key)
        if command.named_only:
            named = " ".join((program.name, *key))
            yield (index - 1, f"is covered only by a rule that names it (Bash({named}:*))")
        if command.after and not before & command.after:
            yield (index - 1, f"is covered only after one of {', '.join(sorted(command.after))}")
    if command.then is not None:
        yield from walk(command.then, argv, index)
        return
    yield from _arguments(program, command, argv, index)


def _arguments(program: Program, command: Command, argv: Sequence[str], index: int) -> Iterator[Finding]:
    options_end = False
    given: set[str] = set()
    while index < len(argv):
        word = argv[index]
        if not options_end and word in program.end:
            options_end, index = True, index + 1
        elif not options_end and _is_option(word) and not (command.options.numbers and word[1:].isdigit()):
            width, why = _option(command.options, argv, index, program.clusters, given)
            if why is not None:
                yield (index, why)
            if width == 0:
                return
            index += width
        else:
            if re.fullmatch(command.args, word) is None:
                yield (index, "is not an argument this command's rule covers")
            index += 1
    if command.requires and not given & command.requires:
        yield (len(argv) - 1, f"is covered only with one of {', '.join(sorted(command.requires))}")


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-"


def _option(
    options: Options, argv: Sequence[str], index: int, clusters: bool, given: set[str] | None = None
) -> tuple[int, str | None]:
    """How many words the option at argv[index] spans (itself and its value; 0: an option we do not know, whose
    value we cannot tell) and why it is not covered (None: it is)."""
    word = argv[index]
    if word.startswith("--") or not clusters:
        name, eq, _ = word.partition("=") if word.startswith("--") else (word, "", "")
        return _one(options, name, bool(eq), argv, index, given)
    for at in range(1, len(word)):
        letter, rest = "-" + word[at], word[at + 1 :]
        found = options.kind(letter)
        if found is None:
            return (0, "is not an option this command's rule covers" + (f" ({letter})" if len(word) > 2 else ""))
        if given is not None:
            given.add(letter)
        kind, why = found
        where = f"({letter}) " if len(word) > 2 else ""
        if kind == "=":
            return (1 if rest else _value_width(argv, index), None if why is None else where + why)
        if why is not None:
            return (1, where + why)
        if kind == "?":
            return (1, None)
    return (1, None)


def _one(
    options: Options, name: str, glued: bool, argv: Sequence[str], index: int, given: set[str] | None
) -> tuple[int, str | None]:
    found = options.kind(name)
    if found is None:
        return (0, "is not an option this command's rule covers")
    if given is not None:
        given.add(name)
    kind, why = found
    if why is None and glued and kind == "":
        why = "takes no value"
    return (_value_width(argv, index) if kind == "=" and not glued else 1, why)


def _value_width(argv: Sequence[str], index: int) -> int:
    """2 when the next word is the option's value. A word that looks like an option never is (npm reads
    `-w --script-shell=x` as two options, git as an option and its value): it is read as an option, which is never
    less strict. `--` is taken as the value (git, pip and make do; npm ends its options there, and then every word
    after it is still checked as an option, which is stricter)."""
    following = argv[index + 1] if index + 1 < len(argv) else None
    return 2 if following is not None and (following == "--" or not _is_option(following)) else 1
