"""The permission policy for tool calls: `--permission-mode`, `--allow-tools`, `--deny-tools`.

In read-only mode, tools that run in the read-only OS sandbox (the built-in dev server's bash, when the
sandbox works) run there instead of being refused.

A `Policy` is the loop's `Permit`: None lets a call run, a string refuses it with a reason the model reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal, Protocol

import anyio

from sprout_agent.messages import ToolUse
from sprout_agent.protocols import ToolSpec

AUTO, ASK, READ_ONLY = "auto", "ask", "read-only"
MODES = (AUTO, ASK, READ_ONLY)


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's answer to "may this call run?"."""

    kind: Literal["once", "always", "deny", "cancel"]  # cancel: Ctrl-C, the turn is being cancelled
    reason: str = ""  # with deny: passed on to the model


class Ask(Protocol):
    """Asks a person about one call; only the interactive session (and an ACP editor) has one.

    `outside_sandbox` set: the OS sandbox stopped the call (it says what) and the question is whether to run
    it again outside the sandbox; "always" then means every such call, for the rest of the session."""

    def __call__(self, spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Awaitable[Decision]: ...


def matching(patterns: Sequence[str], spec: ToolSpec) -> str | None:
    """The first pattern matching the model-facing name (or the raw `server__tool`), if any."""
    names = (spec.name, f"{spec.server}__{spec.tool}")
    return next((p for p in patterns if any(fnmatchcase(name, p) for name in names)), None)


class Policy:
    """Deny patterns win over allow patterns, which win over the mode; `always` answers last the session."""

    def __init__(
        self,
        mode: str,
        *,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        ask: Ask | None = None,
        sandboxed: Collection[tuple[str, str]] = (),
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown permission mode {mode!r}")
        self.mode = mode
        self.allow = tuple(allow)
        self.deny = tuple(deny)
        self.ask = ask
        # (server, tool) pairs that run in the OS sandbox (dev's bash): read-only mode lets them run there.
        self.sandboxed = frozenset(sandboxed)
        self.always: set[str] = set()  # tools approved "always" in this session
        self.always_outside_sandbox = False  # "always" to re-running what the sandbox stopped
        self._asking = anyio.Lock()  # parallel calls ask one question at a time

    async def __call__(self, spec: ToolSpec, use: ToolUse) -> str | None:
        if (pattern := matching(self.deny, spec)) is not None:
            return f"refused: {spec.name} is denied by --deny-tools {pattern}; do not call it again, find another way"
        if matching(self.allow, spec) is not None or spec.name in self.always or self.mode == AUTO:
            return None
        if self.mode == READ_ONLY:
            sandboxed = (spec.server, spec.tool) in self.sandboxed
            return None if spec.read_only is True or sandboxed else _read_only_refusal(spec)
        if self.ask is None:
            return (
                f"not approved: sprout-agent runs with --permission-mode ask and no terminal to ask; "
                f"allow it with --allow-tools {spec.name}"
            )
        return await self._ask(spec, use)

    async def _ask(self, spec: ToolSpec, use: ToolUse) -> str | None:
        assert self.ask is not None
        async with self._asking:
            if spec.name in self.always:  # approved while this call waited for the question
                return None
            decision = await self.ask(spec, use)
        if decision.kind == "always":
            self.always.add(spec.name)
        if decision.kind in ("once", "always"):
            return None
        why = f": {decision.reason.strip()}" if decision.reason.strip() else ""
        return f"denied by the user{why}"

    async def escalate(self, spec: ToolSpec, use: ToolUse, why: str) -> bool:
        """Whether a call the sandbox stopped runs again outside it: only in ask mode, only when a person is
        there to say so, only for the tools that run in our sandbox (the re-run is theirs to honour)."""
        if self.mode != ASK or self.ask is None or (spec.server, spec.tool) not in self.sandboxed:
            return False
        async with self._asking:
            if self.always_outside_sandbox:
                return True
            decision = await self.ask(spec, use, outside_sandbox=why)
        if decision.kind == "always":
            self.always_outside_sandbox = True
        return decision.kind in ("once", "always")


def _read_only_refusal(spec: ToolSpec) -> str:
    why = "may write or execute" if spec.read_only is False else "is not declared read-only by its server"
    return (
        f"refused: sprout-agent runs with --permission-mode read-only and {spec.name} {why} "
        f"(only tools annotated readOnlyHint run); the user can allow it with --allow-tools {spec.name} "
        "or run with --permission-mode auto"
    )
