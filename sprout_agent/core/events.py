"""What the loop reports, as plain frozen dataclasses; renderers turn them into terminal lines or JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sprout_agent.core.messages import Block, Image, Text, Usage
from sprout_agent.core.stop_reasons import ModelStop, StopReason


@dataclass(frozen=True, slots=True)
class Notice:
    """A one-line message for the user; `level` is info, warning or error."""

    text: str
    level: str = "info"


@dataclass(frozen=True, slots=True)
class ServerStarted:
    server: str
    tool_count: int
    hook_count: int
    seconds: float


@dataclass(frozen=True, slots=True)
class ServerFailed:
    server: str
    reason: str
    stderr_tail: str = ""


@dataclass(frozen=True, slots=True)
class ListChanged:
    """A server's tools, prompts or resources list changed (`list_changed`), re-listed between requests.

    `added` and `removed` are the server's names (untrusted text)."""

    server: str
    kind: str  # tools | prompts | resources
    count: int
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def line(self) -> str:
        changes = [f"+{name}" for name in self.added] + [f"-{name}" for name in self.removed]
        detail = f": {' '.join(changes[:10])}{' …' if len(changes) > 10 else ''}" if changes else ""
        return f"MCP server '{self.server}' changed its {self.kind} ({self.count} now){detail}"


@dataclass(frozen=True, slots=True)
class ServerLog:
    """A server's `notifications/message` (its logging): the verbose log only. `text` is untrusted."""

    server: str
    level: str
    text: str


@dataclass(frozen=True, slots=True)
class ModelWaiting:
    """A request has been sent; the spinner runs until text or a reply arrives."""

    request_number: int
    context_tokens: int


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of the model's reasoning as it streams (the model's text: untrusted)."""

    text: str


@dataclass(frozen=True, slots=True)
class AssistantText:
    """The complete text of one model response (rendered as Markdown once complete)."""

    text: str


@dataclass(frozen=True, slots=True)
class ModelReplied:
    stop_reason: ModelStop
    usage: Usage
    seconds: float
    cost_usd: float = 0.0  # of this response, from the ledger's price table


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One complete model response as the API sent it (after `ModelReplied`): what stream-json reports.

    `sdk_names` maps each tool name the model called to the name SDK clients know (`mcp__server__tool`)."""

    message_id: str
    model: str
    content: tuple[Block, ...]
    stop_reason: ModelStop
    usage: Usage
    sdk_names: Mapping[str, str] = field(default_factory=dict[str, str])
    cost_usd: float = 0.0  # of this response, from the ledger's price table


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One raw Messages API stream event as JSON (message_start … message_stop), only when a face asked for
    them (`--include-partial-messages`): the model's text, untrusted."""

    event: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class ApiRetry:
    attempt: int
    reason: str
    delay: float


@dataclass(frozen=True, slots=True)
class ApiWaiting:
    """A request has had no answer, or its reply no event, for `seconds` (said every 15 s of it; `first`: the
    first time for this quiet spell, which a one-line face shows alone)."""

    seconds: int
    first: bool


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call_id: str
    name: str
    server: str
    tool: str
    arguments: dict[str, object]


@dataclass(frozen=True, slots=True)
class ToolRunning:
    """The call passed the permission check and went to its server."""

    call_id: str
    # The input it runs with, when a hook or the permission callback changed the model's (None: unchanged).
    arguments: dict[str, object] | None = None


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running call's server reported progress: for dev__bash, the last few lines of output so far.

    `tail` is the server's text (untrusted), at most 5 lines and 400 characters."""

    call_id: str
    tail: str


@dataclass(frozen=True, slots=True)
class ToolFinished:
    call_id: str
    name: str
    is_error: bool
    seconds: float
    summary: str  # first line of the result, for the compact tool line
    content: tuple[Text | Image, ...] = ()  # the whole result, for faces that show it (ACP)
    diff: str = ""  # a unified diff of what an edit or write changed; "" for other tools
    denied: bool = False  # the permission policy refused the call (it did not run)
    sandbox_denied: bool = False  # the OS sandbox stopped something the call did (and no person let it run outside)
    # With denied: the input refused, when a PreToolUse callback or the permission answer changed the model's.
    denied_input: dict[str, object] | None = None


@dataclass(frozen=True, slots=True)
class HookCalled:
    hook: str
    servers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HookObjected:
    hook: str
    server: str
    text: str


@dataclass(frozen=True, slots=True)
class HookInjected:
    """A hook's text entered the context: `_PostCompact`, `_SessionStart`, `_UserPromptSubmit`, `_PostToolUse`."""

    hook: str
    server: str
    text: str


@dataclass(frozen=True, slots=True)
class HookTimedOut:
    hook: str
    server: str
    consecutive: int


@dataclass(frozen=True, slots=True)
class HookFailed:
    hook: str
    server: str
    reason: str


@dataclass(frozen=True, slots=True)
class HookServerKilled:
    server: str
    reason: str


@dataclass(frozen=True, slots=True)
class StopBudgetSpent:
    rejections: int


@dataclass(frozen=True, slots=True)
class HookAnswered:
    """A hook whose answer is only logged (`_SessionEnd`) said something."""

    hook: str
    server: str
    text: str


@dataclass(frozen=True, slots=True)
class HookBudgetSpent:
    """A hook's objection budget other than `_Stop`'s (`_PreToolUse`) is spent: its calls run unchecked."""

    hook: str
    objections: int


@dataclass(frozen=True, slots=True)
class CompactionStarted:
    reason: str
    tokens_before: int


@dataclass(frozen=True, slots=True)
class CompactionFinished:
    tokens_before: int
    tokens_after: int
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ServerAsked:
    """An MCP server asked the client (a question, `elicitation`; a model call, `sampling`) and the answer."""

    server: str
    kind: str  # elicitation | sampling
    message: str  # the server's own text, or a summary of its request: untrusted
    outcome: str  # accept | decline | cancel (elicitation); sampled | refused (sampling)
    detail: str = ""  # why we answered so, or what the sampling cost

    def line(self) -> str:
        """One line for a person (raw: a face escapes it, the message is the server's)."""
        what = "asked" if self.kind == "elicitation" else "asked to sample the model"
        why = f" ({self.detail})" if self.detail else ""
        return f"MCP server '{self.server}' {what}: {' '.join(self.message.split())[:300]} → {self.outcome}{why}"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a turn changed (checkpoints/tracker.py): as the turn's checkpoints saw it, so a command counts."""

    path: str  # relative to the working directory when it lies in it, else absolute
    status: str  # added | modified | deleted
    added: int  # lines; a binary file counts 0
    removed: int
    calls: tuple[str, ...] = ()  # the tool calls that changed it (ids): an edit tool by its path, else the round's
    tools: tuple[str, ...] = ()  # their names, as the model called them


@dataclass(frozen=True, slots=True)
class TurnChanges:
    """What a user turn changed in the writable roots; `turn` numbers it for /rewind and `sessions rewind`."""

    turn: int
    files: tuple[FileChange, ...] = ()
    skipped: tuple[str, ...] = ()  # "path: reason": past the checkpoint's bounds, so not covered by a rewind

    @property
    def summary(self) -> str:
        """One line for a person: `3 files changed: +12 −4` (every face says it the same way)."""
        return changes_summary(len(self.files), sum(f.added for f in self.files), sum(f.removed for f in self.files))


def changes_summary(files: int, added: int, removed: int) -> str:
    return f"{files} file{'' if files == 1 else 's'} changed: +{added} −{removed}"


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The loop ended a user turn (the headless face's SDK interrupt ends one too: `interrupted`)."""

    stop_reason: StopReason
    text: str
    turns: int
    usage: Usage
    cost_usd: float = 0.0  # the session's total so far, compaction included
    seconds: float = 0.0  # the turn's wall time
    structured_output: Mapping[str, object] | None = None  # --json-schema: the validated answer
    error: str = ""  # why the turn failed, when its stop reason says it did (structured output's retries)
    changes: TurnChanges | None = None  # what it changed on disk; None: no checkpoint (no tool could write)


@dataclass(frozen=True, slots=True)
class SubagentStarted:
    """A `task` call started a subagent (core/subagents.py) on its own context; `call_id` is the parent's call."""

    call_id: str
    agent: str  # the definition's name
    description: str  # the model's short label for the task
    model: str
    depth: int = 1  # 1: a child of the main agent


@dataclass(frozen=True, slots=True)
class SubagentEvent:
    """An event of a subagent's own loop, for the faces to nest under the parent's call (`call_id`)."""

    call_id: str
    agent: str
    event: Event


@dataclass(frozen=True, slots=True)
class SubagentFinished:
    """A subagent ended: its stop reason, and what it cost (already added to the session's ledger)."""

    call_id: str
    agent: str
    stop_reason: StopReason  # the child's turn's, or `error` / `cancelled` when it never ended one
    turns: int
    usage: Usage
    cost_usd: float
    seconds: float
    error: str = ""


# What the hook points report, named once: Event takes them whole, and every sink renders them together (an
# `isinstance(event, HookEvent)` ahead of its `match`, then one exhaustive `match` over these alone).
HookEvent = (
    HookCalled
    | HookObjected
    | HookInjected
    | HookTimedOut
    | HookFailed
    | HookServerKilled
    | StopBudgetSpent
    | HookAnswered
    | HookBudgetSpent
)

Event = (
    Notice
    | ServerStarted
    | ServerFailed
    | ListChanged
    | ServerLog
    | ModelWaiting
    | TextDelta
    | ThinkingDelta
    | AssistantText
    | ModelReplied
    | AssistantMessage
    | StreamEvent
    | ApiRetry
    | ApiWaiting
    | ToolStarted
    | ToolRunning
    | ToolProgress
    | ToolFinished
    | HookEvent
    | CompactionStarted
    | CompactionFinished
    | ServerAsked
    | TurnFinished
    | SubagentStarted
    | SubagentEvent
    | SubagentFinished
)
