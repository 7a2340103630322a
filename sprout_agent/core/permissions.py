"""The permission policy for tool calls: `--permission-mode`, `--allow-tools`, `--deny-tools`.

In ask mode, tools their server annotates read-only (readOnlyHint) run without a question, as Claude Code's
default mode does for reads. In read-only mode, tools that run in the read-only OS sandbox (the built-in dev
server's bash, when the sandbox works) run there instead of being refused.

A `Policy` is the loop's `Permit` (`decide`): None lets a call run, a string refuses it with a reason the model reads.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal, Protocol

import anyio

from sprout_agent.core.claude_rules import BASH, check, command_rules, denies
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permission_mode import Ours, PermissionMode, parse_mode
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.core.settings_rules import NO_RULES, Rule, RuleSet
from sprout_agent.core.subagents import TASK_TOOL


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's answer to "may this call run?"."""

    kind: Literal["once", "always", "deny", "cancel"]  # cancel: Ctrl-C, the turn is being cancelled
    reason: str = ""  # with deny: passed on to the model
    updated_input: dict[str, object] | None = None  # with once: run with this input (an SDK's can_use_tool)
    # With once or always, to the question whether to re-run a call outside the OS sandbox: the answer says so.
    # A yes without it keeps the call in the sandbox, so a face's (or an SDK callback's) plain "allow" never
    # lets a command out (docs/sandbox.md, Escalation).
    outside_sandbox: bool = False
    # With once: keep the call's rule for later sessions as "always" does (an SDK's accepted permission suggestion).
    keep: bool = False


@dataclass(frozen=True, slots=True)
class _Asks:
    """What the rules say of a call only a person (or an SDK's callback) can allow; `note`: why no rule covers it."""

    note: str | None


class Ask(Protocol):
    """Asks a person about one call; only the interactive session (and an ACP editor) has one.

    `outside_sandbox` set: the OS sandbox stopped the call (it says what) and the question is whether to run
    it again outside the sandbox; "always" then means this exact call (same arguments), for the session."""

    def __call__(self, spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Awaitable[Decision]: ...


def matching(patterns: Sequence[str], spec: ToolSpec) -> str | None:
    """The first pattern matching the model-facing name (or the raw `server__tool`), if any."""
    names = (spec.name, f"{spec.server}__{spec.tool}")
    return next((p for p in patterns if any(fnmatchcase(name, p) for name in names)), None)


class Keep(Protocol):
    """Keeps an "always" answer's rule where later sessions read it; the rules it kept (none: it lasts the session
    only), which this session honours as well."""

    def __call__(self, spec: ToolSpec, use: ToolUse) -> Awaitable[Sequence[Rule]]: ...


class Policy:
    """Deny patterns win over allow patterns, which win over the mode; `always` answers last the session."""

    def __init__(
        self,
        mode: PermissionMode,
        *,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        ask: Ask | None = None,
        sandboxed: Collection[tuple[str, str]] = (),
        read_only_sandbox: bool = False,
        program_trusted: Callable[[str], bool] | None = None,
        rules: RuleSet = NO_RULES,
        keep: Keep | None = None,
    ) -> None:
        self.permission_mode = mode  # as given (Claude Code's name, say): the refusal names it
        self.allow = tuple(allow)
        self.deny = tuple(deny)
        # `dev__bash(git:*)` rules (Claude Code's `Bash(git:*)`): checked against the call's command.
        self.allow_commands, self.deny_commands = command_rules(self.allow), command_rules(self.deny)
        self.program_trusted = program_trusted  # a bare program name found outside what the model may write
        self.rules = rules  # the settings files' allow, ask and deny rules (settings_rules.py)
        self.ask = ask
        self.keep = keep  # keeps an "always" answer's rule for later sessions (.claude/settings.local.json)
        # (server, tool) pairs that run in the OS sandbox (dev's bash): read-only mode lets them run there, when
        # that sandbox is read-only (it is chosen at start: a session switched to read-only later keeps its own).
        self.sandboxed = frozenset(sandboxed)
        self.read_only_sandbox = read_only_sandbox
        self.always: set[str] = set()  # tools approved "always" in this session
        self.always_outside_sandbox: set[str] = set()  # calls (tool and exact arguments) re-run "always"
        self._asking = anyio.Lock()  # parallel calls ask one question at a time

    async def __call__(self, spec: ToolSpec, use: ToolUse) -> str | None:
        """The refusal `decide` gives, if any (a call the person's callback changed counts as allowed)."""
        decided = await self.decide(spec, use)
        return decided if isinstance(decided, str) else None

    async def decide(
        self, spec: ToolSpec, use: ToolUse, hook: Literal["allow", "ask"] | None = None, *, answered: bool = False
    ) -> str | ToolUse | None:
        """The loop's `Permit`. `hook` is a PreToolUse callback's decision: "allow" lets the call run as an
        --allow-tools pattern would, "ask" asks even where a rule allows it; deny patterns win over both, as in
        Claude Code. `answered`: this input is the one a person's answer gave (a callback's updatedInput): every
        rule is checked again, and where they would ask, that answer is the yes (nobody is asked twice)."""
        ruled = self._rules(spec, use, hook)
        if not isinstance(ruled, _Asks):
            return ruled
        if answered:
            return None
        if self.ask is None:
            return _nobody_to_ask(self.permission_mode, spec, ruled.note)
        return await self._ask(spec, use)

    def _rules(self, spec: ToolSpec, use: ToolUse, hook: Literal["allow", "ask"] | None) -> str | _Asks | None:
        """What the rules and the mode say of this input, asking nobody: None (it runs), a refusal, or `_Asks`."""
        command = use.input.get("command") if f"{spec.server}__{spec.tool}" == BASH else None
        if (pattern := matching(self.deny, spec)) is not None:
            return f"refused: {spec.name} is denied by --deny-tools {pattern}; do not call it again, find another way"
        if command is not None and denies(self.deny_commands, command):
            return f"refused: this command is denied by a {BASH}(…) rule; do not run it, find another way"
        ruled = self.rules.decide(spec, use, self.program_trusted)
        if ruled is not None and ruled[0] == "deny":
            why = f"{ruled[1].text} in {ruled[1].source}"
            return (
                f"refused: {spec.name} is denied by the permission rule {why}; do not call it again, find another way"
            )
        if ruled is not None and ruled[0] == "ask":
            hook = "ask"  # an ask rule asks in every mode, whatever a hook or an allow rule says (Claude Code)
        if hook == "allow":
            return None
        allowed, note = self._allowed(spec, command)
        allowed = allowed or spec.name in self.always or (ruled is not None and ruled[0] == "allow")
        if hook is None and (allowed or self.mode is PermissionMode.AUTO):
            return None
        # A hook's "ask" asks more, never less: what read-only mode refuses stays refused, not a question.
        if self.mode is PermissionMode.READ_ONLY and not allowed and (refusal := self._read_only(spec)) is not None:
            return refusal
        if hook == "ask" or (self.mode is not PermissionMode.READ_ONLY and spec.read_only is not True):
            return _Asks(note)  # ask mode: a read is not worth a keypress
        return None

    def _read_only(self, spec: ToolSpec) -> str | None:
        sandboxed = (spec.server, spec.tool) in self.sandboxed
        if sandboxed and not self.read_only_sandbox and spec.read_only is not True:
            return _writable_sandbox_refusal(spec)
        return None if spec.read_only is True or sandboxed else _read_only_refusal(spec)

    def _allowed(self, spec: ToolSpec, command: object) -> tuple[bool, str | None]:
        """Whether an allow pattern, the mode or a command rule lets the call run; with a note when a command
        rule matched the command's start but an option keeps the command out (`git -c …` under `git:*`)."""
        if matching(self.allow, spec) is not None or matching(self.permission_mode.allows, spec) is not None:
            return (True, None)
        if (spec.server, spec.tool) == TASK_TOOL:  # as in Claude Code: each of the child's calls passes this policy
            return (True, None)
        return check(self.allow_commands, command, self.program_trusted) if command is not None else (False, None)

    @property
    def mode(self) -> Ours:
        """Our mode, which decides the calls."""
        return self.permission_mode.ours

    def set_mode(self, name: str) -> None:
        """Switches the mode (ours or Claude Code's name) from the next call on; ValueError for an unknown one."""
        self.permission_mode = parse_mode(name)

    async def _ask(self, spec: ToolSpec, use: ToolUse) -> str | ToolUse | None:
        assert self.ask is not None
        async with self._asking:
            if spec.name in self.always:  # approved while this call waited for the question
                return None
            decision = await self.ask(spec, use)
        if decision.kind == "always":
            self.always.add(spec.name)
        if (decision.kind == "always" or decision.keep) and self.keep is not None:
            self.rules = self.rules.adding(await self.keep(spec, use))
        if decision.kind == "once" and decision.updated_input is not None and decision.updated_input != use.input:
            return ToolUse(use.id, use.name, decision.updated_input)  # runs as the person's callback changed it
        if decision.kind in ("once", "always"):
            return None
        why = f": {decision.reason.strip()}" if decision.reason.strip() else ""
        return f"denied by the user{why}"

    async def escalate(self, spec: ToolSpec, use: ToolUse, why: str) -> bool:
        """Whether a call the sandbox stopped runs again outside it: only in ask mode, only when a person is
        there to say so, only for the tools that run in our sandbox (the re-run is theirs to honour), and only on
        an answer that says "outside the sandbox" (`Decision.outside_sandbox`) about this call as it ran."""
        if self.mode is not PermissionMode.ASK or self.ask is None or (spec.server, spec.tool) not in self.sandboxed:
            return False
        # "Always" is for this exact call only: for any command it would let a model run anything unsandboxed
        # by printing what a denied write prints.
        key = f"{spec.name} {json.dumps(use.input, sort_keys=True)}"
        async with self._asking:
            if key in self.always_outside_sandbox:
                return True
            decision = await self.ask(spec, use, outside_sandbox=why)
        # The re-run is the call the sandbox stopped: an answer that would change it is no answer to this question.
        same = decision.updated_input is None or decision.updated_input == use.input
        approved = decision.kind in ("once", "always") and decision.outside_sandbox and same
        if approved and decision.kind == "always":
            self.always_outside_sandbox.add(key)
        return approved


def _nobody_to_ask(mode: str, spec: ToolSpec, note: str | None) -> str:
    why = f" ({note})" if note is not None else ""
    return (
        f"not approved: sprout-agent runs with --permission-mode {mode} and no terminal to ask{why}; "
        f"allow it with --allow-tools {spec.name}"
    )


def _writable_sandbox_refusal(spec: ToolSpec) -> str:
    return (
        f"refused: the permission mode was switched to read-only, but {spec.name} runs in this session's "
        "workspace-write sandbox, where it could write; it runs read-only only in a session started with "
        "--permission-mode read-only (or switch the mode back)"
    )


def _read_only_refusal(spec: ToolSpec) -> str:
    why = "may write or execute" if spec.read_only is False else "is not declared read-only by its server"
    return (
        f"refused: sprout-agent runs with --permission-mode read-only and {spec.name} {why} "
        f"(only tools annotated readOnlyHint run); the user can allow it with --allow-tools {spec.name} "
        "or run with --permission-mode auto"
    )
