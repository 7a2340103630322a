"""What a subagent may use and how its answer returns: the rules, kept apart from who builds it
(session/delegation.py). A subagent is a second `Agent` on a fresh history whose tools are a subset of its
parent's, never a hook, never more than the parent was offered; it shares the parent's permission policy, sandbox,
hooks and ledger, so nothing a child does escapes a rule its parent runs under.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from sprout_agent.core.claude_rules import BUILTIN_TOOLS
from sprout_agent.core.events import Event, ToolFinished, ToolStarted
from sprout_agent.core.hooks.contract import is_hook
from sprout_agent.core.listing import bounded_listing
from sprout_agent.core.messages import Text
from sprout_agent.core.protocols import ToolHost, ToolOutcome, ToolSpec
from sprout_agent.core.stop_reasons import FINISHED, TurnStop
from sprout_agent.core.tool_names import sdk_tool_name

TASK_TOOL = ("agent", "task")  # the built-in server's tool that starts a subagent (mcp/agent_server.py)
DEFAULT_AGENT = "general-purpose"
DEFAULT_MAX_DEPTH = 1  # children start no children, as in Claude Code (SPROUT_AGENT_SUBAGENT_DEPTH raises it)
CHILD_MAX_REQUESTS = 50  # model requests of one child, unless its definition or the parent's --max-turns says less
CHANGED_FILES_SHOWN = 20  # files named in a child's answer; the rest counted
# The agent types in the task tool's description, which every request carries: a repository may hold hundreds of
# definitions with 1 KB descriptions. Past this, the rest by name only (their names bounded too).
TASK_LISTING_MAX_CHARS = 24_000
TASK_NAMES_MAX_CHARS = 2_000
# The todo server keeps one list, the session's plan (its `_Stop` hook holds the main agent to it): a child writing
# it would replace the parent's plan with its own.
SESSION_ONLY = frozenset({("todo", "todo_write")})
# Claude Code's names for the API's web search and fetch (--web, model/web_tools.py): one switch for a subagent.
WEB_TOOLS = ("WebSearch", "WebFetch")
_SPECIFIER = re.compile(r"^(?P<tool>[^(]+)\((?P<spec>.*)\)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Selection:
    tools: tuple[ToolSpec, ...]
    left_out: tuple[str, ...]  # patterns given no tool, and why (the face says so once, as the child starts)
    web: bool = True  # the API's web tools (with --web): only when `tools` names them (or is absent), not denied


def select_tools(
    offered: Sequence[ToolSpec],
    patterns: Sequence[str] | None,
    disallowed: Sequence[str] = (),
    *,
    may_delegate: bool,
) -> Selection:
    """The tools a child gets: those of the parent's `offered` tools that `patterns` name (all of them for None),
    minus `disallowed`. A pattern matches a tool's model name (`dev__read`, `dev__*`) or its Claude Code name
    (`Read`, `mcp__server__tool`). A Claude Code rule with a specifier (`Bash(git:*)`) gives no tool: a definition
    cannot narrow a tool to some commands here, and widening it to all of them would be a surprise."""
    withheld = {*SESSION_ONLY, *(() if may_delegate else (TASK_TOOL,))}
    candidates = [s for s in offered if s.server and not is_hook(s) and (s.server, s.tool) not in withheld]
    left_out: list[str] = []
    chosen = candidates if patterns is None else []
    for pattern in patterns or ():
        if _SPECIFIER.match(pattern):
            left_out.append(f"{pattern}: a rule with a specifier is not applied to a subagent; the tool is not given")
            continue
        found = [s for s in candidates if _matches(s, pattern)]
        if not found and not _names_web([pattern]):
            mine = any((s.server, s.tool) in SESSION_ONLY and _matches(s, pattern) for s in offered)
            why = "the session's own, never a subagent's" if mine else "no such tool in this session"
            left_out.append(f"{pattern}: {why}")
        chosen.extend(s for s in found if s not in chosen)
    denied: list[str] = []
    for pattern in disallowed:
        if found := _SPECIFIER.match(pattern):  # `Bash(git push:*)`: not checkable per command, so the whole tool
            left_out.append(f"{pattern}: a subagent cannot be refused some commands only; the whole tool is left out")
            pattern = found["tool"]
        denied.append(pattern)
    kept = tuple(s for s in chosen if not any(_matches(s, p) for p in denied))
    web = (patterns is None or _names_web(patterns)) and not _names_web(denied)
    return Selection(kept, tuple(left_out), web)


def _names_web(patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern.strip()) for pattern in patterns for name in WEB_TOOLS)


def listing(lines: list[str], types: Sequence[tuple[str, str]]) -> str:
    """`lines`, then a line per agent type (name: description) within TASK_LISTING_MAX_CHARS; the rest by name."""
    return bounded_listing(lines, types, max_chars=TASK_LISTING_MAX_CHARS, names_max_chars=TASK_NAMES_MAX_CHARS)


def _matches(spec: ToolSpec, pattern: str) -> bool:
    """By our name, Claude Code's (`Agent`, `mcp__dev__read`), or one of its older names (`Task`, `MultiEdit`);
    `mcp__server` is all of that server's tools, as in Claude Code's rules."""
    pattern = pattern.strip()
    if pattern.startswith("mcp__") and pattern.count("__") == 1:
        pattern += "__*"
    names = (spec.name, sdk_tool_name(spec.server, spec.tool))
    return any(fnmatch.fnmatchcase(name, pattern) for name in names) or BUILTIN_TOOLS.get(pattern) == spec.name


class ChildHost:
    """A child's view of the session's servers: its tools and every hook (its `Hooks` call them; its model never
    sees one). A call to anything else is refused, whatever the model asks."""

    def __init__(self, host: ToolHost, given: Collection[str]) -> None:
        self._host = host
        self._given = frozenset(given)

    def tools(self) -> Sequence[ToolSpec]:
        return [s for s in self._host.tools() if is_hook(s) or s.name in self._given]

    async def call(
        self,
        spec: ToolSpec,
        arguments: dict[str, object],
        on_progress: Callable[[str], None] | None = None,
        *,
        outside_sandbox: bool = False,
        call_id: str = "",
    ) -> ToolOutcome:
        if is_hook(spec) or spec.name not in self._given:
            return ToolOutcome((Text(f"{spec.name} is not one of this subagent's tools"),), is_error=True)
        return await self._host.call(spec, arguments, on_progress, outside_sandbox=outside_sandbox, call_id=call_id)

    async def call_hook(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolOutcome:
        return await self._host.call_hook(spec, arguments)

    async def kill(self, server: str, reason: str) -> None:
        await self._host.kill(server, reason)

    async def refresh(self) -> bool:
        return False  # a child's tools are fixed when it starts; the session's loop re-lists, between its requests


class ChildWork:
    """What a child did, from its own events: the files its edit tools changed and the commands it ran (a
    command's changes show in the parent turn's checkpoint, not here)."""

    def __init__(self) -> None:
        self.files: dict[str, None] = {}
        self.commands = 0
        self._names: dict[str, str] = {}

    def saw(self, event: Event) -> None:
        if isinstance(event, ToolStarted):
            self._names[event.call_id] = event.tool
        elif isinstance(event, ToolFinished) and not event.is_error:
            if event.diff:
                self.files.update(dict.fromkeys(_diff_paths(event.diff)))
            elif self._names.get(event.call_id) == "bash":
                self.commands += 1

    def lines(self) -> list[str]:
        lines: list[str] = []
        if self.files:
            named = list(self.files)[:CHANGED_FILES_SHOWN]
            more = len(self.files) - len(named)
            lines.append("Files the subagent changed: " + ", ".join(named) + (f" and {more} more" if more else ""))
        if self.commands:
            lines.append(f"Commands the subagent ran: {self.commands}")
        return lines


def _diff_paths(diff: str) -> Iterable[str]:
    for line in diff.splitlines():
        if line.startswith("+++ ") and not line.endswith("/dev/null"):
            yield line[4:].removeprefix("b/").strip()


def answer(text: str, stop_reason: TurnStop, turns: int, work: ChildWork) -> ToolOutcome:
    """The child's final text as the parent's tool result, with why it stopped when it did not finish."""
    lines = [text.strip() or "(the subagent gave no answer)"]
    if stop_reason not in FINISHED:
        lines.insert(0, f"[the subagent stopped before it finished: {stop_reason} after {turns} requests]")
    lines.extend(work.lines())
    return ToolOutcome((Text("\n\n".join(lines)),), is_error=stop_reason in ("budget", "hook_stopped"))
