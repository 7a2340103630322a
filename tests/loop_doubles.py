"""In-process doubles for the agent loop: a scripted `Model`, an in-memory `ToolHost`, and the real collaborators.

    loop = build_loop([reply(call("fake__echo", text="hi")), reply("done")], host=MemoryHost({"fake": server()}))
    result = await loop.turn("go")

The model answers from a script and refuses (raises `InvalidRequest`) any request the real API would refuse:
each request is converted with the real `llm.to_api_messages`/`to_api_tools` and checked by tests/api_rules.py.
The host runs scripted tools and hooks and records every call with start and finish marks, so a test proves
ordering and overlap from the record, and synchronises on `anyio.Event`s the host sets, never on sleeps.
"""

from __future__ import annotations

import inspect
import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from sprout_agent.core.agent import Agent, TurnResult
from sprout_agent.core.compaction import Compactor
from sprout_agent.core.events import Event
from sprout_agent.core.hooks.calling import Hooks, parse_allowlist
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.limits import Limits
from sprout_agent.core.messages import Block, Image, Message, Text, Thinking, ToolResult, ToolUse, Usage
from sprout_agent.core.protocols import (
    Escalate,
    HookCallFailed,
    ModelReply,
    ModelRequest,
    Permit,
    ToolHost,
    ToolOutcome,
    ToolSpec,
)
from sprout_agent.core.stop_reasons import ModelStop
from sprout_agent.core.structured import OutputContract
from sprout_agent.core.tool_names import model_tool_name
from sprout_agent.core.tracing import NO_TRACER, Tracer
from sprout_agent.model import web_tools as server_tools
from sprout_agent.model.api_messages import EPHEMERAL, to_api_messages, to_api_tools
from tests.api_rules import assert_valid_request, sign
from tests.bounds import bounded

MODEL = "claude-sonnet-test"  # priced as Sonnet: $3 in, $15 out per million tokens
MAX_OUTPUT_TOKENS = 32_000
SYSTEM = "You are sprout-agent under test.\nWorking directory: /work/project"
CWD = "/work/project"
SESSION_ID = "0123456789abcdef0123456789abcdef"
_sequence = itertools.count(1)  # a logical clock shared by every double: ordering without timing


# ---------------------------------------------------------------- the scripted model


@dataclass(frozen=True)
class Hang:
    """A model step that never answers (until the test cancels it); `entered` is set once it waits."""

    entered: anyio.Event


ModelStep = ModelReply | BaseException | Hang | Callable[[ModelRequest], Any]


def call(name: str, id: str | None = None, /, **arguments: object) -> ToolUse:
    """A tool_use block; the id is made up by the model when not given."""
    return ToolUse(id or "", name, dict(arguments))


def reply(*parts: str | Block, stop_reason: ModelStop | None = None, usage: Usage | None = None) -> ModelReply:
    """A model response; strings become text, stop_reason defaults to tool_use if it calls a tool, else end_turn.

    Without `usage`, tokens are estimated from the request as the HTTP fake does (len(json) // 4).
    """
    content = tuple(Text(part) if isinstance(part, str) else part for part in parts)
    stop = stop_reason or ("tool_use" if any(isinstance(b, ToolUse) for b in content) else "end_turn")
    return ModelReply(content, stop, usage if usage is not None else _ESTIMATE)


_ESTIMATE = Usage(-1, -1)  # marker: fill in from the request
THINKING_BUDGET = 4_000


def thought(text: str, model: str = MODEL) -> Thinking:
    """A thinking block as `model` would sign it (tests/api_rules.py checks the signature comes back)."""
    return Thinking(text, sign(model, text), model)


def api_body(
    request: ModelRequest, model: str = MODEL, thinking: bool = False, web: bool = False, strict: bool = False
) -> dict[str, Any]:
    """The /v1/messages body AnthropicModel sends for `request` (llm.py's conversion, our cache breakpoints);
    `thinking`: as with `--thinking on` (a budget, which the API's strictest rules go with); `web`: --web;
    `strict`: the model supports structured outputs (strict tool schemas)."""
    web = web and request.web
    messages = to_api_messages(
        request.messages, tools_offered=bool(request.tools), model=model, thinking=thinking, web=web
    )
    body: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens or MAX_OUTPUT_TOKENS, "messages": messages}
    if thinking:
        body["thinking"] = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
    if request.system:
        body["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
    if request.tools or web:
        body["tools"] = (server_tools.definitions() if web else []) + to_api_tools(request.tools, strict=strict)
    return body


class ScriptedModel:
    """A `protocols.Model` answering from a list of steps; records every request and its API body.

    A step is a ModelReply, an exception to raise (PromptTooLongError, ApiError…), `Hang`, or a callable
    (sync or async) that sees the request and returns one of those.
    """

    def __init__(
        self,
        steps: Sequence[ModelStep],
        name: str = MODEL,
        thinking: bool = False,
        web: bool = False,
        strict: bool = False,
    ) -> None:
        self._steps = list(steps)
        self.strict = strict
        self._name = name
        self.thinking = thinking
        self.web = web
        self.requests: list[ModelRequest] = []
        self.bodies: list[dict[str, Any]] = []
        self._ids = itertools.count()

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, model: str) -> None:
        self._name = model

    @property
    def gen_ai_provider(self) -> str:
        return "anthropic"  # the first party's, as the real client's for ANTHROPIC_BASE_URL

    @property
    def remaining(self) -> int:
        return len(self._steps)

    async def complete(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelReply:
        body = api_body(request, self._name, self.thinking, self.web, self.strict)
        assert_valid_request(body)  # the real API answers 400 here; a test must never build such a history
        self.requests.append(request)
        self.bodies.append(body)
        assert self._steps, f"the model script is exhausted at request {len(self.requests)}"
        step: Any = self._steps.pop(0)
        while callable(step) and not isinstance(step, BaseException):
            step = step(request)
            if inspect.isawaitable(step):
                step = await step
        if isinstance(step, Hang):
            step.entered.set()
            await anyio.sleep_forever()
        if isinstance(step, BaseException):
            raise step
        assert isinstance(step, ModelReply), f"not a model step: {step!r}"
        for block in step.content:
            if isinstance(block, Text) and block.text:
                on_text(block.text)
        return self._finished(step, body)

    def _finished(self, step: ModelReply, body: dict[str, Any]) -> ModelReply:
        content = tuple(
            ToolUse(b.id or f"toolu_{len(self.requests)}_{next(self._ids)}", b.name, b.input)
            if isinstance(b, ToolUse)
            else b
            for b in step.content
        )
        usage = step.usage
        if usage is _ESTIMATE:
            usage = Usage(len(json.dumps(body)) // 4, max(1, len(repr(content)) // 4))
        return ModelReply(content, step.stop_reason, usage, self._name)


# ---------------------------------------------------------------- the in-memory tool host


@dataclass
class Call:
    """One call the host received; `started`/`finished` are logical-clock marks, `*_at` monotonic seconds."""

    server: str
    tool: str
    arguments: dict[str, object]
    hook: bool
    started: int = field(default_factory=lambda: next(_sequence))
    started_at: float = field(default_factory=time.monotonic)
    finished: int | None = None
    finished_at: float | None = None
    outcome: ToolOutcome | None = None
    cancelled: bool = False
    failed: str | None = None  # a hook call that raised HookCallFailed
    on_progress: Callable[[str], None] | None = None  # what the loop passed: a behaviour may report through it
    call_id: str = ""  # the model's tool_use id, as the loop passed it

    def progress(self, tail: str) -> None:
        """Report progress as a server would (nothing when the caller asked for none)."""
        if self.on_progress is not None:
            self.on_progress(tail)

    def finish(self) -> None:
        self.finished, self.finished_at = next(_sequence), time.monotonic()


Behaviour = Callable[[Call], Awaitable[ToolOutcome]]


def outcome(text: str, is_error: bool = False) -> ToolOutcome:
    return ToolOutcome((Text(text),), is_error)


def answer(text: str) -> Behaviour:
    async def run(_call: Call) -> ToolOutcome:
        return outcome(text)

    return run


def echo(key: str = "text") -> Behaviour:
    async def run(c: Call) -> ToolOutcome:
        return outcome(str(c.arguments.get(key, "")))

    return run


def fails(text: str = "this tool failed on purpose") -> Behaviour:
    async def run(_call: Call) -> ToolOutcome:
        return outcome(text, is_error=True)

    return run


def reports(*tails: str, result: ToolOutcome | None = None) -> Behaviour:
    """Reports each tail as progress, in order, then answers `result` (default: "done")."""

    async def run(c: Call) -> ToolOutcome:
        for tail in tails:
            c.progress(tail)
        return result if result is not None else outcome("done")

    return run


def hangs() -> Behaviour:
    """Never answers; only cancellation (a cancelled turn, a timeout, a kill) ends the call."""

    async def run(_call: Call) -> ToolOutcome:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return run


def sleeps(seconds: float, text: str = "done") -> Behaviour:
    async def run(_call: Call) -> ToolOutcome:
        await anyio.sleep(seconds)
        return outcome(text)

    return run


def image(media_type: str = "image/png", data: str = "iVBORw0KGgo=") -> Behaviour:
    async def run(_call: Call) -> ToolOutcome:
        return ToolOutcome((Image(media_type, data),))

    return run


class Barrier:
    """Calls sharing a barrier wait until `parties` of them have started: concurrent calls pass, serial ones
    never do (the test's `fail_after` ends that), so overlap is proven without any clock."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self._all_in: anyio.Event | None = None

    def behaviour(self, text: str = "done") -> Behaviour:
        async def run(_call: Call) -> ToolOutcome:
            if self._all_in is None:
                self._all_in = anyio.Event()
            self.arrived += 1
            if self.arrived >= self.parties:
                self._all_in.set()
            await self._all_in.wait()
            return outcome(text)

        return run


HANG = "<hang>"  # an answer in a hook sequence: never answer


def answers(*items: str | ToolOutcome | BaseException | Behaviour, then: str = "") -> Behaviour:
    """Successive answers of a hook (or tool): text, an outcome, an exception to raise (HookCallFailed),
    HANG, or a behaviour; after the last, `then` forever ("" = no objection)."""
    queue = list(items)

    async def run(c: Call) -> ToolOutcome:
        item = queue.pop(0) if queue else then
        if item == HANG:
            return await hangs()(c)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ToolOutcome):
            return item
        if isinstance(item, str):
            return outcome(item)
        return await item(c)

    return run


@dataclass(frozen=True)
class Tool:
    behaviour: Behaviour
    read_only: bool | None = None
    properties: Mapping[str, object] = field(default_factory=dict[str, object])  # inputSchema properties
    description: str = ""


def tool(
    behaviour: Behaviour | str, *, read_only: bool | None = None, properties: Mapping[str, object] | None = None
) -> Tool:
    return Tool(answer(behaviour) if isinstance(behaviour, str) else behaviour, read_only, properties or {})


def server(**tools: Tool | Behaviour | str) -> dict[str, Tool]:
    """A server's tools by bare name, in listing order; a name starting with `_` is a hook."""
    return {name: value if isinstance(value, Tool) else tool(value) for name, value in tools.items()}


def default_server() -> dict[str, Tool]:
    """Like tests/fake_mcp_server.py: echo, add, fail and read_only (annotated readOnlyHint)."""
    return server(
        echo=tool(echo(), properties={"text": {"type": "string"}}),
        add=tool(_add, properties={"a": {"type": "number"}, "b": {"type": "number"}}),
        fail=fails(),
        read_only=tool("read only", read_only=True),
    )


async def _add(c: Call) -> ToolOutcome:
    a, b = c.arguments["a"], c.arguments["b"]
    assert isinstance(a, int | float) and isinstance(b, int | float)
    return outcome(str(a + b))


class _Server:
    def __init__(self, name: str, tools: Mapping[str, Tool]) -> None:
        self.name = name
        self.tools = dict(tools)
        self.specs = [
            ToolSpec(
                model_tool_name(name, bare),
                name,
                bare,
                t.description or f"{name} {bare}",
                {"type": "object", "properties": dict(t.properties)},
                t.read_only,
            )
            for bare, t in self.tools.items()
        ]
        self.dead: str | None = None  # the kill reason once killed
        self.in_flight: set[anyio.CancelScope] = set()

    def unavailable(self) -> str:
        return f"server '{self.name}' is unavailable: {self.dead}"


class MemoryHost:
    """A `protocols.ToolHost` over scripted servers (config order = mapping order); records calls and kills."""

    def __init__(self, servers: Mapping[str, Mapping[str, Tool]] | None = None) -> None:
        self._servers = {name: _Server(name, tools) for name, tools in (servers or {}).items()}
        self.calls: list[Call] = []
        self.kills: list[tuple[str, str]] = []
        self._started: dict[str, anyio.Event] = {}

    def started(self, tool: str) -> anyio.Event:
        """Set when the first call of `tool` (bare name) starts."""
        return self._started.setdefault(tool, anyio.Event())

    def calls_of(self, tool: str, server: str | None = None) -> list[Call]:
        return [c for c in self.calls if c.tool == tool and (server is None or c.server == server)]

    # --- ToolHost ---------------------------------------------------------------------------------------

    def tools(self) -> Sequence[ToolSpec]:
        return [spec for s in self._servers.values() if s.dead is None for spec in s.specs]

    async def call(
        self,
        spec: ToolSpec,
        arguments: dict[str, object],
        on_progress: Callable[[str], None] | None = None,
        *,
        outside_sandbox: bool = False,
        call_id: str = "",
    ) -> ToolOutcome:
        target = self._servers.get(spec.server)
        if target is None:
            return outcome(f"server '{spec.server}' is unavailable: not configured", is_error=True)
        if target.dead is not None:
            return outcome(target.unavailable(), is_error=True)
        _record, result = await self._run(target, spec, arguments, hook=False, on_progress=on_progress, call_id=call_id)
        if result is None:
            return outcome(target.unavailable(), is_error=True)  # killed while running
        return result

    async def call_hook(self, spec: ToolSpec, arguments: dict[str, object]) -> ToolOutcome:
        target = self._servers.get(spec.server)
        if target is None:
            raise HookCallFailed(f"server '{spec.server}' is unavailable: not configured")
        if target.dead is not None:
            raise HookCallFailed(target.unavailable())
        record, result = await self._run(target, spec, arguments, hook=True)
        if result is None:
            record.failed = target.unavailable()
            raise HookCallFailed(record.failed)
        return result

    async def refresh(self) -> bool:
        return False

    async def kill(self, server: str, reason: str) -> None:
        self.kills.append((server, reason))
        target = self._servers.get(server)
        if target is None:
            return
        target.dead = reason
        for scope in target.in_flight:
            scope.cancel()

    # --- internals --------------------------------------------------------------------------------------

    async def _run(
        self,
        target: _Server,
        spec: ToolSpec,
        arguments: dict[str, object],
        *,
        hook: bool,
        on_progress: Callable[[str], None] | None = None,
        call_id: str = "",
    ) -> tuple[Call, ToolOutcome | None]:
        record = Call(target.name, spec.tool, dict(arguments), hook, on_progress=on_progress, call_id=call_id)
        self.calls.append(record)
        self.started(spec.tool).set()
        behaviour = target.tools[spec.tool].behaviour
        result: ToolOutcome | None = None
        try:
            with anyio.CancelScope() as scope:  # a kill cancels this scope, not the caller's
                target.in_flight.add(scope)
                try:
                    result = await behaviour(record)
                except HookCallFailed as error:
                    record.failed = str(error)
                    raise
                finally:
                    target.in_flight.discard(scope)
        except BaseException:
            record.cancelled = record.failed is None
            raise
        finally:
            record.finish()
        record.outcome = result
        record.cancelled = result is None
        return record, result


# ---------------------------------------------------------------- the loop with its real collaborators


class MemoryRecorder:
    """A `protocols.Recorder` keeping what the session store would hold: the base plus every append."""

    def __init__(self) -> None:
        self.history: list[Message] = []
        self.resets: list[str] = []
        self.early: list[ToolResult] = []  # results recorded one by one, before their batch's message

    def appended(self, message: Message) -> None:
        self.history.append(message)

    def result(self, result: ToolResult) -> None:
        self.early.append(result)

    def reset(self, history: Sequence[Message], reason: str) -> None:
        self.history = list(history)
        self.resets.append(reason)


@dataclass
class Loop:
    agent: Agent
    model: ScriptedModel
    host: Any  # the MemoryHost built or given; any ToolHost (the real pool) may stand in
    hooks: Hooks
    ledger: Ledger
    compactor: Compactor
    recorder: MemoryRecorder
    events: list[Event]

    async def turn(self, prompt: str = "go", timeout: float = 10) -> TurnResult:
        """One turn, bounded (`timeout`, scaled by tests/bounds.py)."""
        with anyio.fail_after(bounded(timeout)):
            return await self.agent.run_turn(prompt)

    def of(self, kind: type[Any]) -> list[Any]:
        """The events of one type, in order."""
        return [event for event in self.events if isinstance(event, kind)]

    @property
    def history(self) -> list[Message]:
        return self.agent.history

    def results(self, message: int = -1) -> dict[str, tuple[bool, str]]:
        """The tool results of a history message by call id: (is_error, text)."""
        blocks = self.agent.history[message].content
        return {b.tool_use_id: (b.is_error, _text(b)) for b in blocks if isinstance(b, ToolResult)}


def _text(result: ToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, Text))


def build_loop(
    script: Sequence[ModelStep],
    *,
    host: ToolHost | None = None,
    hook_servers: str | None = None,
    hook_timeout_ms: int = 2500,
    stop_max_rejections: int = 3,
    window: int = 200_000,
    threshold: int | None = 134_400,  # the default: 80 % of (200k window - 32k output)
    max_compactions: int = 10,
    max_requests: int | None = None,
    max_budget_usd: float | None = None,
    max_parallel_tools: int = 8,
    permit: Permit | None = None,
    escalate: Escalate | None = None,
    system: str = SYSTEM,
    on_event: Callable[[Event], None] | None = None,
    thinking: bool = False,
    tool_hooks: bool = False,
    pre_tool_max_objections: int | None = None,
    web: bool = False,
    cwd: str = CWD,
    output: OutputContract | None = None,
    strict: bool = False,
    tracer: Tracer = NO_TRACER,
) -> Loop:
    """The real Agent, Hooks, Ledger and Compactor around a scripted model and an in-memory host.

    Defaults are the documented settings defaults; `host` defaults to one server "fake" (default_server()).
    `on_event` sees each loop event as it is emitted (after it is recorded), to act on it mid-turn. `cwd`: the
    session's working directory (what hooks are told); give a real pool's (builtin_pool) its own.
    """
    events: list[Event] = []

    def emit(event: Event) -> None:
        events.append(event)
        if on_event is not None:
            on_event(event)

    model = ScriptedModel(script, thinking=thinking, web=web, strict=strict)
    host = host if host is not None else MemoryHost({"fake": default_server()})  # config order = mapping order
    ledger = Ledger(model.name)
    compactor = Compactor(
        model=model,
        window=window,
        threshold=threshold,
        max_compactions=max_compactions,
        emit=events.append,
        on_usage=ledger.add,
    )
    hooks = Hooks(
        host,
        allowlist=parse_allowlist(hook_servers),
        timeout_ms=hook_timeout_ms,
        stop_max_rejections=stop_max_rejections,
        emit=events.append,
        tool_hooks=tool_hooks,
        pre_tool_max_objections=pre_tool_max_objections,
        tracer=tracer,
    )
    recorder = MemoryRecorder()
    agent = Agent(
        model=model,
        host=host,
        hooks=hooks,
        emit=emit,
        system=system,
        ledger=ledger,
        compactor=compactor,
        limits=Limits(max_requests, max_budget_usd, max_parallel_tools),
        session_id=SESSION_ID,
        cwd=cwd,
        permit=permit,
        escalate=escalate,
        recorder=recorder,
        output=output,
        tracer=tracer,
    )
    return Loop(agent, model, host, hooks, ledger, compactor, recorder, events)


@asynccontextmanager
async def builtin_pool(
    cwd: Path, events: list[Event], names: Sequence[str] = ("dev", "todo"), before: Sequence[Any] = ()
) -> AsyncIterator[ToolHost]:
    """The real server pool running built-in servers inside this process (in-memory MCP, no subprocess);
    `before`: more server configs (ServerConfig), in config order ahead of the built-in ones."""
    from sprout_agent.config.files import LoadedConfig, with_builtin_servers
    from sprout_agent.config.settings import child_environment
    from sprout_agent.mcp.pool import ServerPool

    configs = [*before, *with_builtin_servers(LoadedConfig((), (), ()), names, cwd).servers]
    pool = ServerPool(
        configs,
        emit=events.append,
        start_timeout=bounded(30),
        tool_timeout=bounded(60),
        result_max_bytes=51_200,
        child_env=lambda env: child_environment(dict(os.environ), env),
    )
    async with pool:
        yield pool


def hook_data(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The hook outputs carried by an API body, decoded from their JSON tool_result text, in order."""
    found: list[dict[str, Any]] = []
    for message in body["messages"]:
        for block in message["content"]:
            if block.get("type") == "tool_result" and block["tool_use_id"].startswith("sprout_hook_"):
                found.append(json.loads("".join(part["text"] for part in block["content"])))
    return found
