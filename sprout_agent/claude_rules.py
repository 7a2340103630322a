"""Claude Code's permission rules (`--allowedTools`, `--disallowedTools`) as our tool patterns, and the
`dev__bash(git:*)` command rules a `Policy` checks against a call's `command` argument.

`mcp__server__tool` → `server__tool`; `mcp__server` and `mcp__server__*` → `server__*`; Claude Code's built-in
tool names → the built-in dev and todo tools; `Bash(git:*)`, `Bash(git diff *)`, `Bash(npm test)` → command
rules. A rule we cannot honour is warned about: an allow rule is dropped (nothing runs unasked that would not
have), a deny rule with a specifier we cannot check denies the whole tool (never silently wider).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Claude Code's tools → ours (tools with no counterpart here are absent: a rule naming one is a warning).
BUILTIN_TOOLS = {
    "Bash": "dev__bash",
    "Read": "dev__read",
    "Write": "dev__write",
    "Edit": "dev__edit",
    "MultiEdit": "dev__edit",
    "Glob": "dev__glob",
    "Grep": "dev__grep",
    "LS": "dev__glob",
    "TodoWrite": "todo__todo_write",
}
NOT_HERE = frozenset(
    {"WebFetch", "WebSearch", "Task", "Agent", "NotebookEdit", "NotebookRead", "BashOutput", "KillShell"}
    | {"KillBash", "ExitPlanMode", "SlashCommand", "Skill", "ToolSearch", "AskUserQuestion"}
)
BASH = "dev__bash"
# A command with any of these is never matched by an allow rule: `git status; rm -rf /` is not "git".
SHELL_META = frozenset(";&|<>$`(){}\\\n\r\"'*?[]~!#")
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


def translate(values: Iterable[str], *, deny: bool) -> Translated:
    flag = "--disallowedTools" if deny else "--allowedTools"
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


def allows(rules: Sequence[tuple[str, bool]], command: object) -> bool:
    """An allow rule matches a plain command only: one with shell metacharacters is never auto-allowed."""
    if not isinstance(command, str) or any(char in SHELL_META for char in command):
        return False
    return any(_matches(rule, " ".join(command.split())) for rule in rules)


def denies(rules: Sequence[tuple[str, bool]], command: object) -> bool:
    """A deny rule matches the command or any part of a compound one (split at ; & | ( ) ` $ and newlines).
    A command that runs it another way (env, sudo, a script) is not caught: the README says so."""
    if not isinstance(command, str):
        return False
    parts = re.split(r"[;&|()`$\n\r{}]+", command)
    return any(_matches(rule, " ".join(part.split())) for part in parts for rule in rules)


def _matches(rule: tuple[str, bool], command: str) -> bool:
    words, prefix = rule
    return command == words or (prefix and command.startswith(words + " "))
