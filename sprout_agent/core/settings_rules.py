"""Claude Code's `permissions.allow`, `ask` and `deny` rules from settings files, each with the file it came from,
decided as Claude Code decides them: the first deny rule that matches refuses, else the first ask rule asks, else
the first allow rule allows; no rule leaves the call to the flags' patterns and the mode (permissions.Policy).

`Read(path)` covers the tools that read files (`dev__read`, `dev__grep`, `dev__glob`) and, for a deny or ask rule,
a shell command that names the path as one of its words; `Edit(path)` the tools that write (`dev__write`,
`dev__edit`). Tool names, `mcp__…` and `Bash(…)` rules are claude_rules.py's. docs/permissions.md says what a rule
cannot see (a command that builds the name, `cat .e*`): there the sandbox's deny list is the wall.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from sprout_agent.core.claude_rules import BASH, check, command_rule, denies, translate
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.path_rules import PathPattern, candidates, parse_path
from sprout_agent.core.protocols import ToolSpec

Kind = Literal["deny", "ask", "allow"]
KINDS: tuple[Kind, ...] = ("deny", "ask", "allow")  # the order rules are decided in
READ_TOOLS = frozenset({"dev__read", "dev__grep", "dev__glob"})
EDIT_TOOLS = frozenset({"dev__write", "dev__edit"})
PATH_RULE_TOOLS = {"Read": READ_TOOLS, "Edit": EDIT_TOOLS}
_PATH_RULE = re.compile(r"(?P<tool>Read|Edit)\((?P<spec>.+)\)", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    """One rule as written, where it came from, and what it checks: a tool pattern (ours, `dev__bash` or `git__*`),
    a command (for `dev__bash`), or a path (for the file tools)."""

    kind: Kind
    text: str
    source: str
    pattern: str | None = None
    command: tuple[str, bool] | None = None
    path: PathPattern | None = None
    tools: frozenset[str] = frozenset()  # with a path: the tools it covers

    def matches(self, spec: ToolSpec, use: ToolUse, cwd: str, trusted: Callable[[str], bool] | None) -> bool:
        name = f"{spec.server}__{spec.tool}"
        if self.path is not None:
            return self._path_matches(name, use, cwd)
        if self.command is not None:
            if name != BASH:
                return False
            command = use.input.get("command")
            if self.kind == "allow":
                return check((self.command,), command, trusted)[0]
            return denies((self.command,), command)  # deny and ask: any part of a compound command
        assert self.pattern is not None
        return any(fnmatchcase(n, self.pattern) for n in (spec.name, name))

    def _path_matches(self, name: str, use: ToolUse, cwd: str) -> bool:
        assert self.path is not None
        if name in self.tools:
            path = use.input.get("file_path", use.input.get("path"))  # read, write, edit: file_path; searches: path
            named = path if isinstance(path, str) and path else "."
            return any(self.path.matches(found) for found in candidates(named, cwd))
        if name == BASH and self.kind != "allow" and self.tools >= READ_TOOLS:
            return any(self.path.matches(found) for word in _command_words(use.input.get("command"), cwd)
                       for found in candidates(word, cwd))  # fmt: skip
        return False


def _command_words(command: object, cwd: str) -> list[str]:
    """Every word of every part of a shell command (split as claude_rules.denies splits), `<file` included."""
    if not isinstance(command, str):
        return []
    words: list[str] = []
    for part in re.split(r"[;&|()`$\n\r{}<>]+", command):
        try:
            words += shlex.split(part)
        except ValueError:
            words += part.split()
    return [word.split("=", 1)[-1] for word in words if word and not word.startswith("-")]


@dataclass(frozen=True)
class RuleSet:
    """The settings files' rules (higher-precedence files' first), and the working directory paths start from."""

    rules: tuple[Rule, ...] = ()
    cwd: str = "."

    def decide(
        self, spec: ToolSpec, use: ToolUse, trusted: Callable[[str], bool] | None = None
    ) -> tuple[Kind, Rule] | None:
        """Deny before ask before allow; the first rule of that kind that matches."""
        for kind in KINDS:
            for rule in self.rules:
                if rule.kind == kind and rule.matches(spec, use, self.cwd, trusted):
                    return kind, rule
        return None

    def denied_paths(self) -> tuple[str, ...]:
        """The paths deny rules on reading name without a wildcard: the sandbox hides them from every command."""
        return tuple(
            literal
            for rule in self.rules
            if rule.kind == "deny" and rule.path is not None and rule.tools == READ_TOOLS
            if (literal := rule.path.literal) is not None
        )

    def adding(self, rules: Sequence[Rule]) -> RuleSet:
        """These rules and `rules` after them (a rule kept during the session)."""
        return RuleSet((*self.rules, *rules), self.cwd) if rules else self


NO_RULES = RuleSet()


def parse_rules(
    kind: Kind, texts: Sequence[str], *, source: str, settings_base: str, cwd: str, home: str | None
) -> tuple[list[Rule], list[str]]:
    """A settings file's rules of one kind, and a warning for each one that cannot be honoured as written: an
    allow rule we cannot check is dropped, a deny or ask rule we cannot check covers its whole tool."""
    rules: list[Rule] = []
    warnings: list[str] = []
    for text in texts:
        found = _PATH_RULE.fullmatch(text.strip())
        if found is not None:
            path = parse_path(found["spec"], settings_base=settings_base, cwd=cwd, home=home)
            if path is not None:
                rules.append(Rule(kind, text, source, path=path, tools=PATH_RULE_TOOLS[found["tool"]]))
                continue
        translated = translate([text], deny=kind != "allow", where=f"{source}: permissions.{kind}")
        warnings += translated.warnings
        for pattern in translated.patterns:
            command = command_rule(pattern[len(BASH) + 1 : -1]) if pattern.startswith(f"{BASH}(") else None
            rules.append(Rule(kind, text, source, pattern=None if command else pattern, command=command))
    return rules, warnings
