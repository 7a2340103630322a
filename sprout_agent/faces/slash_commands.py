"""The slash commands, one table for every face that takes them: the REPL lists and completes them, ACP announces
them to the editor (`available_commands_update`), and both run the shared ones through this module.

A command the editor cannot use (`/exit`, `/login`: the editor owns the window and the browser) is marked for the
REPL only; the rest behave the same in both, worded the same.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sprout_agent.config.definitions import CustomCommand
from sprout_agent.config.files import REMOTE
from sprout_agent.config.settings import provider_model
from sprout_agent.core.agent import Agent
from sprout_agent.core.errors import UsageError
from sprout_agent.core.hooks.calling import is_hook
from sprout_agent.core.permissions import Policy
from sprout_agent.core.status import context_line, counted_context_line
from sprout_agent.model.facts import ModelFacts
from sprout_agent.model.switch import effort_command, switch_agent
from sprout_agent.session.model_building import facts_for
from sprout_agent.session.runtime import Runtime
from sprout_agent.trust.untrusted import printable

Face = Literal["repl", "acp"]
_BOTH: frozenset[Face] = frozenset(("repl", "acp"))
_REPL: frozenset[Face] = frozenset(("repl",))


@dataclass(frozen=True, slots=True)
class Command:
    name: str  # without the slash
    summary: str  # one line: /help and the editor's menu
    argument: str | None = None  # how the argument is shown (`[focus]`); None: the command takes none
    faces: frozenset[Face] = _BOTH


COMMANDS: tuple[Command, ...] = (
    Command("help", "this list", faces=_REPL),
    Command("tools", "the tools the model sees, by server"),
    Command("servers", "each server's state, tools, hooks, start time, last error; config files read"),
    Command("clear", "start a new conversation (the _Stop budget spans the whole session)"),
    Command("compact", "summarise the conversation now, optionally focused", "[focus]"),
    Command("context", "how full the context window is"),
    Command("cost", "tokens and cost so far"),
    Command("model", "show the model, or switch to NAME for the next request", "[NAME]"),
    Command("effort", "show the effort level and the model's choices, or set it", "[LEVEL]"),
    Command("permissions", "the permission mode and every rule, with where each came from"),
    # REPL only for now: its questions are drawn in the terminal; an editor would need its own (docs/rewind.md).
    Command("rewind", "put files back to before a turn, fork the conversation there, or both (Esc Esc)", faces=_REPL),
    Command("login", "log in to a remote server with OAuth (the browser), then start it", "NAME", _REPL),
    Command("exit", "leave (Ctrl-D works too)", faces=_REPL),
)

# A line of a command's answer and how it reads: plain, dim (by the way), yellow (take note), red (it failed).
Style = Literal["", "dim", "yellow", "red"]
Line = tuple[str, Style]


def commands_for(face: Face) -> tuple[Command, ...]:
    return tuple(command for command in COMMANDS if face in command.faces)


def names_for(face: Face) -> list[str]:
    """`/name` of each command of the face, in the table's order (what Tab completes)."""
    return [f"/{command.name}" for command in commands_for(face)]


def parse(text: str, face: Face) -> tuple[Command, str] | None:
    """(command, argument) when `text` is one of the face's commands; anything else is not ours."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    head, _, argument = stripped[1:].partition(" ")
    head = "exit" if head == "quit" and face == "repl" else head
    found = next((command for command in commands_for(face) if command.name == head), None)
    return (found, argument.strip()) if found is not None else None


def custom_command(commands: Sequence[CustomCommand], text: str, face: Face) -> tuple[CustomCommand, str] | None:
    """(the command, its argument) when `text` runs a custom command (`.claude/commands/NAME.md`); one of ours of the
    same name is ours (a project's file cannot take over /clear)."""
    stripped = text.strip()
    if not stripped.startswith("/") or parse(stripped, face) is not None:
        return None
    head, _, argument = stripped[1:].partition(" ")
    found = next((command for command in commands if command.name == head), None)
    return (found, argument.strip()) if found is not None else None


def expand(command: CustomCommand, argument: str) -> str:
    """The command's body as the prompt: `$ARGUMENTS` is the whole argument, `$1`…`$9` its words (shell quoting);
    a missing one is empty. Nothing in the body runs (Claude Code's `!` lines stay text: docs/definitions.md)."""
    try:
        words = shlex.split(argument)
    except ValueError:  # an unclosed quote: the words as typed
        words = argument.split()
    body = re.sub(
        r"\$([1-9])", lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", command.body
    )
    body = body.replace("$ARGUMENTS", argument)
    if argument and "$ARGUMENTS" not in command.body and not re.search(r"\$[1-9]", command.body):
        body = f"{body.rstrip()}\n\nARGUMENTS: {argument}"  # as Claude Code: an argument is never dropped
    return body


def custom_for(commands: Sequence[CustomCommand], face: Face) -> tuple[list[CustomCommand], list[str]]:
    """(the custom commands the face can run, a notice for each one of ours takes the name of): a shadowed one would
    be listed by /help and Tab, yet `/NAME` runs ours, so it is left out and said once."""
    kept: list[CustomCommand] = []
    notices: list[str] = []
    for command in commands:
        if parse(f"/{command.name}", face) is None:
            kept.append(command)
        else:
            where = printable(command.source, 200)
            notices.append(f"custom command /{command.name} ({where}) not used: /{command.name} is sprout-agent's own")
    return kept, notices


def custom_lines(commands: Sequence[CustomCommand]) -> list[str]:
    """/help's lines for the custom commands (their descriptions are a project's text: printable, one line)."""
    shown = [(f"/{c.name}" + (f" {c.argument_hint}" if c.argument_hint else ""), c.description) for c in commands]
    width = max((len(usage) for usage, _ in shown), default=0)
    return [f"  {usage.ljust(width)}  {printable(summary, 100)}" for usage, summary in shown]


def help_lines(face: Face) -> list[str]:
    shown = [(f"/{c.name}" + (f" {c.argument}" if c.argument else ""), c.summary) for c in commands_for(face)]
    width = max(len(usage) for usage, _ in shown)
    return [f"  {usage.ljust(width)}  {summary}" for usage, summary in shown]


def tool_rows(agent: Agent) -> list[tuple[str, str, str]]:
    """(server, tool, the description's first line) for each tool the model sees."""
    return [(spec.server, spec.name, printable((spec.description or "").split("\n", 1)[0])) for spec in agent.tools]


def server_rows(runtime: Runtime) -> list[tuple[str, str, str, str, str, str]]:
    """(server, state, tools, hooks, start, last error) for each configured server."""
    pool, agent = runtime.pool, runtime.agent
    hook_names: dict[str, list[str]] = {}
    for spec in pool.tools():
        if is_hook(spec):
            hook_names.setdefault(spec.server, []).append(spec.tool)
    rows: list[tuple[str, str, str, str, str, str]] = []
    for status in pool.status():
        hooks = ", ".join(hook_names.get(status.name, [])) or "-"
        active = "active" if agent.hooks.allows(status.name) else "off"
        rows.append(
            (
                f"{status.name} ({status.transport} {status.url})" if status.transport in REMOTE else status.name,
                status.state,
                str(status.tool_count),
                f"{hooks} ({active})" if hooks != "-" else "-",
                f"{status.start_seconds:.2f}s" if status.start_seconds is not None else "-",
                (status.last_error or "")[:60],
            )
        )
    return rows


def server_notes(runtime: Runtime) -> list[Line]:
    prepared = runtime.prepared
    files = ", ".join(str(p) for p in prepared.loaded.files_read) or "none (built-in servers only)"
    return [(f"config files read: {files}", "dim"), (f"sandbox for dev__bash: {prepared.sandbox.describe()}", "dim")]


async def context_command(agent: Agent, name: str, argument: str) -> list[Line]:
    """/cost, /context (exact counts where the API gives them) and /compact [focus]."""
    children: list[Line] = [(f"  subagent {line}", "dim") for line in agent.ledger.child_lines()]
    if name == "cost":
        return [(agent.ledger.summary(), ""), *children]
    if name == "context":
        # A subagent's context is its own: only its answer is in this one (its spend is under /cost).
        kept: list[Line] = [
            (f"  {len(children)} subagents ran in their own contexts; their answers are in this one", "dim")
        ]
        return [(await counted_context_line(agent), ""), *(kept if children else [])]
    await agent.compact("manual", focus=argument or None)
    return [(f"Compacted. {context_line(agent)}", "dim")]


async def clear_command(agent: Agent) -> list[Line]:
    await agent.clear_session()
    return [("new conversation", "dim")]


def effort_lines(agent: Agent, argument: str) -> list[Line]:
    text, failed = effort_command(agent.model, argument)
    return [(text, "red" if failed else "dim")]


async def model_command(runtime: Runtime, argument: str) -> list[Line]:
    """Switches the model for the next request; the conversation, the ledger and the window follow it, and the
    new model's facts (window, capabilities) are fetched so that its settings are checked."""
    agent = runtime.agent
    if not argument:
        where = runtime.prepared.settings.provider.describe()  # who serves it: the provider and its region
        return [(f"model: {agent.model.name} on {where}{_facts_line(agent.model)}", "")]
    try:
        facts, notes = await switch_to(runtime, argument, "/model")
    except ValueError as error:
        return [(f"cannot switch: {error}", "red")]
    return [
        *((note, "yellow") for note in notes),
        (f"model: {facts.model} (from the next request), window {facts.window}", "dim"),
    ]


async def switch_to(runtime: Runtime, name: str, where: str) -> tuple[ModelFacts, list[str]]:
    """The one model switch of a running session (/model, the SDK's set_model, the editor's model picker): the
    new model's facts fetched, then the client, ledger and window follow; the lines saying which settings were
    adjusted. ValueError (naming `where` for a bad id) when it cannot switch."""
    try:
        prepared = runtime.prepared  # `sonnet`, or a first-party id, as the provider names it
        checked = provider_model(name, prepared.settings_env, prepared.settings.provider, where)
    except UsageError as error:
        raise ValueError(str(error)) from None
    facts = await facts_for(runtime.prepared, checked)
    return facts, switch_agent(runtime.agent, checked, facts, runtime.prepared.settings)


def _facts_line(model: object) -> str:
    facts = getattr(model, "facts", None)
    if not isinstance(facts, ModelFacts):
        return ""
    effort = getattr(model, "effort", None) or "default"
    thinking = getattr(model, "thinking", None) or "the model's default"
    return f" (window {facts.window}, from the {facts.source}; thinking {thinking}, effort {effort})"


async def shared_command(runtime: Runtime, command: Command, argument: str) -> list[Line] | None:
    """Runs a command both faces take and answers in text; None for one the face draws itself (tools, servers)
    or runs itself (help, login, exit)."""
    agent = runtime.agent
    match command.name:
        case "clear":
            return await clear_command(agent)
        case "compact" | "context" | "cost":
            return await context_command(agent, command.name, argument)
        case "model":
            return await model_command(runtime, argument)
        case "effort":
            return effort_lines(agent, argument)
        case "permissions":
            return permission_lines(agent)
        case _:
            return None


def permission_lines(agent: Agent) -> list[Line]:
    """/permissions: the mode, then the deny, ask and allow rules (the order they are decided in), each with its
    source: a settings file, or the command line's patterns."""
    policy = agent.permit
    if not isinstance(policy, Policy):
        return [("permissions: decided by the program driving this session", "dim")]
    mode = policy.permission_mode
    lines: list[Line] = [(f"mode: {mode} ({mode.ours})", "")]
    flagged = [("deny", pattern) for pattern in policy.deny] + [("allow", pattern) for pattern in policy.allow]
    rows = [(kind, printable(rule.text, 200), printable(rule.source, 200)) for rule in policy.rules.rules
            for kind in (rule.kind,)] + [(kind, pattern, "command line") for kind, pattern in flagged]  # fmt: skip
    for kind in ("deny", "ask", "allow"):
        for found, text, source in rows:
            if found == kind:
                lines.append((f"  {kind:<5}  {text}  ({source})", ""))
    if len(lines) == 1:
        lines.append(("  no rules: the mode decides every call", "dim"))
    return lines


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table for a face that shows text (the editor): pipes in cells escaped."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *(line(row) for row in rows)])
