"""Claude Code's permission rules (`--allowedTools`, `--disallowedTools`) as our tool patterns, and the
`dev__bash(git:*)` command rules a `Policy` checks against a call's `command` argument.

`mcp__server__tool` → `server__tool`; `mcp__server` and `mcp__server__*` → `server__*`; Claude Code's built-in
tool names → the built-in dev and todo tools; `Bash(git:*)`, `Bash(git diff *)`, `Bash(npm test)` → command
rules; for a program we know, a prefix rule covers only the subcommands and options its table lists
(command_tables.py: `git status`, not `git -c …` nor `git submodule--helper`). A rule we cannot honour is warned
about: an allow rule is dropped (nothing runs unasked that would not have), a deny rule with a specifier we cannot
check denies the whole tool (never silently wider).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sprout_agent.core.tool_names import CLAUDE_CODE_NAMES, model_tool_name

# Claude Code's tools → ours (tools with no counterpart here are absent: a rule naming one is a warning); two of
# its tools whose job one of ours does too.
BUILTIN_TOOLS = {claude: model_tool_name(*ours) for ours, claude in CLAUDE_CODE_NAMES.items()} | {
    "MultiEdit": "dev__edit",
    "LS": "dev__glob",
    "Task": "agent__task",
}
NOT_HERE = frozenset(
    {"WebFetch", "WebSearch", "NotebookEdit", "NotebookRead", "BashOutput", "KillShell"}
    | {"KillBash", "ExitPlanMode", "SlashCommand", "ToolSearch", "AskUserQuestion"}
)
BASH = "dev__bash"
BUILTIN_SERVERS = frozenset(server for server, _ in CLAUDE_CODE_NAMES)
# Not allowed in a rule's words, nor outside quotes in a command an allow rule matches: `git status; rm -rf /` is
# not "git". A quoted word is one word, as bash reads it (`git commit -m "fix: it; now"`).
SHELL_META = frozenset(";&|<>$`(){}\\\n\r\"'*?[]~!#")
QUOTES = frozenset("\"'")
_RULE = re.compile(r"(?P<tool>[A-Za-z0-9_*-]+)(?:\((?P<spec>.*)\))?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Translated:
    patterns: tuple[str, ...]  # our patterns, command rules (`dev__bash(git:*)`) included
    warnings: tuple[str, ...]


def split_rules(values: Iterable[str]) -> list[str]:
    """Comma- or space-separated, repeatable; a `Bash(npm run test:*)` rule keeps its spaces and commas."""
    rules: list[str] = []
    for value in values:
        rules.extend(part for part in re.findall(r"[^\s,(]+(?:\([^)]*\))?", value) if part)
    return rules


def translate(values: Iterable[str], *, deny: bool, where: str | None = None) -> Translated:
    """`where`: what the warnings name (a settings file's list); the flag by default."""
    flag = where or ("--disallowedTools" if deny else "--allowedTools")
    patterns: list[str] = []
    warnings: list[str] = []
    for rule in split_rules(values):
        pattern, warning = _one(rule, deny)
        if pattern is not None:
            patterns.append(pattern)
        if warning is not None:
            warnings.append(f"warning: {flag} {rule}: {warning}")
    return Translated(tuple(patterns), tuple(warnings))


def _one(rule: str, deny: bool) -> tuple[str | None, str | None]:
    found = _RULE.fullmatch(rule)
    if found is None:
        return (None, "not a rule sprout-agent reads; ignored")
    tool, spec = found["tool"], found["spec"]
    if tool.startswith("mcp__"):
        parts = tool.split("__")
        if len(parts) == 2 or parts[2] in ("", "*"):
            return (f"{parts[1]}__*", None)
        return ("__".join(parts[1:]), None)
    if tool in NOT_HERE:
        return (None, "sprout-agent has no such tool; ignored")
    ours = BUILTIN_TOOLS.get(tool, tool)
    if spec is None or spec.strip() in ("", "*"):
        return (ours, None)
    if ours == BASH and command_rule(spec) is not None:
        return (f"{BASH}({spec.strip()})", None)
    if deny:
        return (ours, f"the ({spec}) part cannot be checked here: all of {ours} is denied")
    return (None, f"the ({spec}) part cannot be checked here; the rule is ignored (the tool still asks)")


def offered_builtins(value: str) -> tuple[dict[str, frozenset[str]] | None, tuple[str, ...]]:
    """`--tools`: per built-in server, the tools it offers (None: all, for "default"), and a warning per name that is
    no built-in tool here. Claude Code's names (`Bash`, `Read`…) or ours (`dev__bash`, `todo__todo_read`)."""
    names = split_rules([value])
    if names == ["default"]:
        return (None, ())
    ours = {model: pair for pair in CLAUDE_CODE_NAMES for model in (model_tool_name(*pair), CLAUDE_CODE_NAMES[pair])}
    offered: dict[str, set[str]] = {}
    warnings: list[str] = []
    for name in names:
        server, _, tool = name.partition("__")
        pair = ours.get(name) or ((server, tool) if server in BUILTIN_SERVERS and tool else None)
        if pair is None:
            warnings.append(f"--tools {name}: not one of the built-in tools here; ignored")
            continue
        offered.setdefault(pair[0], set()).add(pair[1])
    return ({server: frozenset(tools) for server, tools in offered.items()}, tuple(warnings))


def command_rule(spec: str) -> tuple[str, bool] | None:
    """`git:*` / `git diff *` → ("git diff", prefix=True); `npm test` → ("npm test", exact); None for a
    pattern with a wildcard elsewhere."""
    text = spec.strip()
    prefix = text.endswith((":*", " *"))
    words = text[:-2].strip() if prefix else text
    if not words or any(char in SHELL_META for char in words):
        return None
    return (" ".join(words.split()), prefix)


def command_rules(patterns: Sequence[str]) -> tuple[tuple[str, bool], ...]:
    """The `dev__bash(…)` command rules among our patterns."""
    found: list[tuple[str, bool]] = []
    for pattern in patterns:
        if pattern.startswith(f"{BASH}(") and pattern.endswith(")"):
            rule = command_rule(pattern[len(BASH) + 1 : -1])
            if rule is not None:
                found.append(rule)
    return tuple(found)


def check(
    rules: Sequence[tuple[str, bool]], command: object, program_trusted: Callable[[str], bool] | None = None
) -> tuple[bool, str | None]:
    """Whether an allow rule covers the command, and when a prefix rule matched but a word its program's table does
    not list keeps it out (`git -c …` under `git:*`), a note saying so. Only a plain command is covered: its words
    (shlex, as bash splits them; quotes are fine) and no other shell syntax. An exact rule covers exactly what it
    says. `program_trusted`: whether PATH finds a program by that name outside what the model may write
    (trust/program_lookup.py); a program we have a table for is covered only then."""
    argv = plain_words(command)
    if argv is None:
        return (False, None)
    note: str | None = None
    for words, prefix in rules:
        named = words.split()
        if argv == named or (prefix and argv[: len(named)] == named):
            why = None if argv == named else _uncovered(argv, len(named))
            why = why or _planted(argv[0], program_trusted)
            if why is None:
                return (True, None)
            note = note or f"the rule {BASH}({words}{':*' if prefix else ''}) does not cover it: {why}"
    return (False, note)


def _planted(program: str, program_trusted: Callable[[str], bool] | None) -> str | None:
    """Why a bare program name we have a table for may run something the model wrote (None: it may not)."""
    if program_trusted is None or "/" in program or program_trusted(program):
        return None
    from sprout_agent.core.command_tables import program_for

    if program_for(program) is None:  # a rule for any other program already lets the model's code run
        return None
    return f"PATH finds {program!r} in a directory the model can write (or not at all), not the program the rule means"


def _uncovered(argv: list[str], start: int) -> str | None:
    """Why the program's table keeps the command out of a rule naming its first `start` words (None: it does not,
    or we have no table for the program). The tables load on the first command a prefix rule matches, not at start."""
    from sprout_agent.core.command_rules import uncovered
    from sprout_agent.core.command_tables import program_for

    program = program_for(argv[0])
    return None if program is None else uncovered(program, argv, start)


def allows(rules: Sequence[tuple[str, bool]], command: object) -> bool:
    return check(rules, command)[0]


def plain_words(command: object) -> list[str] | None:
    """The command's words when it is nothing but words (shlex, as bash splits them), else None."""
    if not isinstance(command, str) or not _plain(command):
        return None
    try:
        return shlex.split(command) or None
    except ValueError:
        return None


def _plain(command: str) -> bool:
    """No shell syntax but quotes: no metacharacter outside them, no `$`, backquote, backslash or `!` inside double
    quotes (single quotes keep everything literal), no newline anywhere, every quote closed."""
    quote: str | None = None
    for char in command:
        if quote is None and char in QUOTES:
            quote = char
        elif char == quote:
            quote = None
        elif char in "\n\r" or (quote is None and char in SHELL_META) or (quote == '"' and char in "$`\\!"):
            return False
    return quote is None


def denies(rules: Sequence[tuple[str, bool]], command: object) -> bool:
    """A deny rule matches the command or any part of a compound one (split at ; & | ( ) ` $ and newlines), its
    words unquoted as bash would (`'rm' -rf x` is rm). A command that runs it another way (env, sudo, a script)
    is not caught: docs/permissions.md says so."""
    if not isinstance(command, str):
        return False
    parts = re.split(r"[;&|()`$\n\r{}]+", command)
    return any(_matches(rule, _words(part)) for part in parts for rule in rules)


def _words(part: str) -> list[str]:
    try:
        return shlex.split(part)
    except ValueError:  # a quote the split cut in two: the plain words still count
        return part.split()


def _matches(rule: tuple[str, bool], argv: list[str]) -> bool:
    words, prefix = rule
    named = words.split()
    return argv == named or (prefix and len(argv) > len(named) and argv[: len(named)] == named)


_SAVED_NAME = re.compile(r"[A-Za-z0-9_-]+")
SAVED_COMMAND_MAX = 300  # characters of a command kept as an exact rule; a longer one stays this session's


def saved_rule(server: str, tool: str, arguments: Mapping[str, object]) -> str | None:
    """The rule an "always" answer about this call is kept as, in Claude Code's syntax (None: the answer lasts the
    session only). A plain command is kept exactly (`Bash(npm test)`): never the whole of Bash, as no prefix we
    could guess is what the person read. Edits stay the session's, as Claude Code's "allow all edits during this
    session" does. An MCP tool is `mcp__server__tool`, only when both names are plain: a `*` or `[` in a name
    a server chose would make the rule cover tools nobody approved."""
    claude = CLAUDE_CODE_NAMES.get((server, tool))
    if claude == "Bash":
        argv = plain_words(arguments.get("command"))
        command = " ".join(argv) if argv is not None else ""
        if not command or len(command) > SAVED_COMMAND_MAX or command_rule(command) != (command, False):
            return None
        return f"Bash({command})" if shlex.split(command) == argv else None
    if claude is not None:
        return None if claude in ("Write", "Edit") else claude
    if _SAVED_NAME.fullmatch(server) and _SAVED_NAME.fullmatch(tool) and "__" not in server:
        return f"mcp__{server}__{tool}"
    return None
