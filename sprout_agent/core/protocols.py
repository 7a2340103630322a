"""The seams between the loop and its collaborators, as Protocols and the plain data that crosses them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from sprout_agent.core.events import Event, TurnChanges
from sprout_agent.core.messages import Block, Image, Message, Text, ToolResult, ToolUse, Usage
from sprout_agent.core.stop_reasons import ModelStop


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One MCP tool as offered to the model (`name`) and as known to its server (`server`, `tool`)."""

    name: str
    server: str
    tool: str
    description: str
    input_schema: dict[str, object]
    read_only: bool | None = None  # from MCP annotations; None = unknown
    strict: bool = False  # the API's structured outputs constrain the input, where the model supports them


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    content: tuple[Text | Image, ...]
    is_error: bool = False
    sandbox_denied: str | None = None  # what the OS sandbox stopped, as the server marked it (may be escalated)
    diff: str = ""  # the unified diff of a file the call changed (faces show it; the model reads `content`)


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One resource a server lists (its text is the server's: untrusted)."""

    server: str
    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """One prompt a server offers; `arguments` are (name, required) in the server's order."""

    server: str
    name: str
    description: str = ""
    arguments: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True, slots=True)
class ModelRequest:
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    max_tokens: int | None = None
    web: bool = True  # the API's web search and fetch may be offered (with --web); not to a compaction summary
    partial: bool = False  # the loop's own request: its raw stream events go out when a face asked for them


@dataclass(frozen=True, slots=True)
class ModelReply:
    content: tuple[Block, ...]
    stop_reason: ModelStop
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    id: str = ""  # the API's message id (msg_…)


class Model(Protocol):
    """Streams one model response; calls `on_text` with each text delta as it arrives."""

    @property
    def name(self) -> str: ...

    @property
    def gen_ai_provider(self) -> str:
        """Who serves the model, as telemetry's `gen_ai.provider.name` says it (`anthropic`, `aws.bedrock`, …)."""
        ...

    async def complete(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply: ...


class ToolHost(Protocol):
    """The MCP servers as the loop and the hooks see them."""

    def tools(self) -> Sequence[ToolSpec]:
        """Every live tool, hooks included, in config order then server order."""
        ...

    async def call(
        self,
        spec: ToolSpec,
        arguments: dict[str, object],
        on_progress: Callable[[str], None] | None = None,
        *,
        outside_sandbox: bool = False,
        call_id: str = "",
    ) -> ToolOutcome:
        """Calls a tool; a tool error or a dead server is an `is_error` outcome, never an exception.

        `on_progress` gets the server's progress messages (untrusted text) while the call runs.
        `outside_sandbox`: a person approved running this call outside the OS sandbox (escalation).
        `call_id`: the model's tool_use id, told to our own in-process servers (a subagent nests under it)."""
        ...

    async def call_hook(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolOutcome:
        """Calls a hook tool; the caller bounds the wait (cancellation must end it promptly).

        Raises `HookCallFailed` for a transport or protocol failure or a dead server.
        """
        ...

    async def kill(self, server: str, reason: str) -> None:
        """Ends a server's whole process group and marks it dead."""
        ...

    async def refresh(self) -> bool:
        """Re-lists what servers said changed (`list_changed`); True when `tools()` changed.

        The loop calls it only between requests, so the tools block changes only there."""
        ...


class Delegation(Protocol):
    """What the built-in `agent` server serves (mcp/agent_server.py); the session runs it (session/delegation.py)."""

    def task_description(self) -> str:
        """The `task` tool's description: what it does and the agent definitions the model may pick."""
        ...

    def has_skills(self) -> bool: ...

    async def run_task(self, call_id: str, arguments: Mapping[str, object]) -> ToolOutcome:
        """Runs a subagent for the call `call_id` (the model's tool_use id) to its end; its answer is the outcome."""
        ...

    def read_skill(self, name: str, file: str | None) -> str:
        """A skill's body, or a file beside it; ValueError (the model reads it) for a bad request."""
        ...


class HookCallFailed(Exception):
    """A hook call failed below the tool level (transport, crash, dead server)."""


EventSink = Callable[[Event], None]


class Permit(Protocol):
    """Decides whether a tool call may run (`permissions.Policy`)."""

    def decide(
        self, spec: ToolSpec, use: ToolUse, hook: Literal["allow", "ask"] | None = None, *, answered: bool = False
    ) -> Awaitable[str | ToolUse | None]:
        """None = allowed, a `ToolUse` = allowed with the input it gives (the person's callback changed it), a
        string = refused, with a reason the model reads. It gets the call itself (id and input), so a face can
        match the question to the call it already shows. `hook`: a PreToolUse callback's decision, "allow" (no
        question) or "ask" (the question, even where a rule allows the call). `answered`: the input is the one
        an answer gave; it is decided again by every rule, asking nobody (that answer was the yes), so a `ToolUse`
        never comes back."""
        ...


# Decides whether a call the OS sandbox stopped (`why`) runs again outside it: only a person can say yes.
Escalate = Callable[[ToolSpec, ToolUse, str], Awaitable[bool]]


class Checkpoints(Protocol):
    """Snapshots of the writable roots around a user turn (checkpoints/tracker.py). Each call is bounded and never
    raises: a checkpoint that fails is a notice, never a failed turn."""

    async def turn_started(self, prompt: str, history: Sequence[Message]) -> None: ...

    async def round_starting(self, uses: Sequence[ToolUse], specs: Mapping[str, ToolSpec]) -> None:
        """Before a tool round: the turn's checkpoint is taken before its first round that could write."""
        ...

    async def round_finished(self) -> None: ...

    async def turn_finished(self) -> TurnChanges | None: ...


class Recorder(Protocol):
    """Receives the conversation as it grows (the session store)."""

    def appended(self, message: Message) -> None: ...

    def result(self, result: ToolResult) -> None:
        """One result of the tool batch in flight, as soon as it is known; the batch's message follows."""
        ...

    def reset(self, history: Sequence[Message], reason: str) -> None:
        """The history was replaced (compaction, truncation, /clear): a new base to resume from."""
        ...
