"""What the Claude Agent SDKs' control requests do to a headless session (docs/sdk.md).

`initialize` takes the SDK's system prompt and names its in-process MCP servers; `interrupt` cancels the running
turn; `set_permission_mode` and `set_model` apply from the next request; `mcp_status` lists the servers.
`SdkAsk` puts the permission question to the SDK's `can_use_tool` callback, and `SdkRelay` carries an SDK
server's MCP messages (`mcp_message`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, cast

import anyio

from sprout_agent.core.events import Event, Notice
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.core.tool_names import sdk_tool_name
from sprout_agent.faces.commands import switch_to
from sprout_agent.faces.headless.control import Body, Control, ControlError, Handler
from sprout_agent.model.system_prompt import build_system_prompt
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.runtime import Runtime

# How long a permission question waits for the SDK's callback (it may ask a person): then the call is refused.
ASK_TIMEOUT = 600.0
# How long one MCP message to an SDK server waits (the pool's own call timeout usually ends it first).
MCP_MESSAGE_TIMEOUT = 600.0
# Features an SDK may ask for in `initialize` that would change the outcome if silently dropped: refused.
REFUSED_INIT_FIELDS = {
    "hooks": "hook callbacks (hooks)",
    "jsonSchema": "structured output (jsonSchema)",
}
_STATES = {"running": "connected", "starting": "pending", "needs login": "needs-auth"}


class SdkSession:
    """The control-request handlers of one headless session; `attach` hands them the running session."""

    def __init__(self, prepared: Prepared, emit: Callable[[Event], None]) -> None:
        self.prepared = prepared
        self.emit = emit
        self.runtime: Runtime | None = None
        self.ready = anyio.Event()
        self.turn: anyio.CancelScope | None = None  # the running turn, which `interrupt` cancels
        self.system: tuple[str | None, str | None] | None = None  # (replace, append) from initialize
        self.initialized = False

    def handlers(self) -> dict[str, Handler]:
        return {
            "initialize": self.initialize,
            "interrupt": self.interrupt,
            "set_permission_mode": self.set_permission_mode,
            "set_model": self.set_model,
            "mcp_status": self.mcp_status,
        }

    def attach(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._apply_system()
        self.ready.set()

    def cancel_turn(self) -> None:
        if self.turn is not None:
            self.turn.cancel()

    async def _runtime(self) -> Runtime:
        """The running session; a request that comes while the servers still start waits for them (bounded)."""
        try:
            with anyio.fail_after(self.prepared.settings.server_start_timeout + 60):
                await self.ready.wait()
        except TimeoutError:
            raise ControlError("the session has not started (its servers are still starting)") from None
        assert self.runtime is not None
        return self.runtime

    async def initialize(self, request: Body) -> Body:
        refused = [what for key, what in REFUSED_INIT_FIELDS.items() if request.get(key)]
        if refused:
            raise ControlError(f"sprout-agent does not support the SDK's {' or '.join(refused)} (docs/sdk.md)")
        if self.initialized:
            raise ControlError("already initialized")
        self.initialized = True
        replace, append = request.get("systemPrompt"), request.get("appendSystemPrompt")
        if replace is not None or append is not None:
            self.system = (_prompt_text(replace, "systemPrompt"), _prompt_text(append, "appendSystemPrompt"))
            if self.runtime is not None:
                self._apply_system()
        if request.get("agents"):
            self.emit(Notice("the SDK's agents (subagents) are not supported: they are ignored", "warning"))
        self._check_sdk_servers(request.get("sdkMcpServers"))
        model = self.prepared.model
        return {
            "commands": [],
            "agents": [],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [{"value": model, "displayName": model, "description": "the session's model"}],
            "account": {},
            "pid": os.getpid(),
        }

    def _apply_system(self) -> None:
        if self.system is None or self.runtime is None:
            return
        options = self.prepared.options
        replace, append = self.system
        self.runtime.agent.system = build_system_prompt(
            options.cwd,
            replace=replace if replace is not None else options.system_prompt,
            append=append if append is not None else options.append_system_prompt,
        )

    def _check_sdk_servers(self, names: object) -> None:
        configured = {s.name for s in self.prepared.loaded.servers if s.transport == "sdk"}
        offered = {str(n) for n in cast(list[object], names)} if isinstance(names, list) else set[str]()
        for name in sorted(configured - offered):
            self.emit(Notice(f"SDK MCP server '{name}' is configured but the SDK does not host it", "warning"))

    async def interrupt(self, request: Body) -> Body:
        del request
        self.cancel_turn()
        return {}

    async def set_permission_mode(self, request: Body) -> Body:
        policy = (await self._runtime()).agent.permit
        if not isinstance(policy, Policy):
            raise ControlError("this session has no permission policy to change")
        try:
            policy.set_mode(str(request.get("mode")))
        except ValueError as error:
            raise ControlError(str(error)) from None
        return {}

    async def set_model(self, request: Body) -> Body:
        runtime = await self._runtime()
        raw = request.get("model")
        name = self.prepared.settings.model if raw in (None, "default") else str(raw)
        try:
            _, notes = await switch_to(runtime, name, "model")
        except ValueError as error:
            raise ControlError(f"cannot switch: {error}") from None
        for note in notes:
            self.emit(Notice(note, "warning"))
        return {}

    async def mcp_status(self, request: Body) -> Body:
        del request
        statuses = (await self._runtime()).pool.status()
        servers = [
            {
                "name": s.name,
                "status": _STATES.get(s.state, "failed"),
                **({"error": s.last_error} if s.last_error else {}),
            }
            for s in statuses
        ]
        return {"mcpServers": servers}


def _prompt_text(value: object, field: str) -> str | None:
    """A system prompt field: a string, or the TypeScript SDK's list of strings (joined by blank lines)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value)):
        return "\n\n".join(cast(list[str], value))
    raise ControlError(f"initialize: {field} must be a string or a list of strings")


class SdkAsk:
    """The `Ask` of a session run by an SDK with `--permission-prompt-tool stdio`: its `can_use_tool` callback
    answers as the person would. A deny with `interrupt` also cancels the turn."""

    def __init__(self, control: Control, cancel_turn: Callable[[], None]) -> None:
        self.control = control
        self.cancel_turn = cancel_turn

    async def __call__(self, spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        fields: Body = {
            "tool_name": sdk_tool_name(spec.server, spec.tool),
            "input": use.input,
            "tool_use_id": use.id,
            "permission_suggestions": [],
        }
        if outside_sandbox is not None:
            fields["decision_reason"] = f"the OS sandbox stopped it ({outside_sandbox}); run it outside the sandbox?"
        try:
            answer = await self.control.request("can_use_tool", fields, ASK_TIMEOUT)
        except ControlError as error:
            return Decision("deny", f"no answer from the SDK's permission callback: {error}")
        return self._decision(answer, use)

    def _decision(self, answer: Body, use: ToolUse) -> Decision:
        if answer.get("behavior") == "allow":
            updated = answer.get("updatedInput")
            if updated is not None and updated != use.input:
                # The call runs as the model wrote it or not at all: the history must show what ran.
                return Decision("deny", "the permission callback changed the call's input; sprout-agent cannot run it")
            return Decision("once")
        message = str(answer.get("message") or "")
        if answer.get("interrupt") is True:
            self.cancel_turn()
            return Decision("cancel", message)
        return Decision("deny", message)


class SdkRelay:
    """Carries one SDK-hosted MCP server's JSON-RPC messages as `mcp_message` control requests."""

    def __init__(self, control: Control, servers: Sequence[str]) -> None:
        self.control = control
        self.servers = frozenset(servers)

    async def send(self, server: str, message: dict[str, Any]) -> dict[str, Any]:
        """The SDK's JSON-RPC answer to `message` (an acknowledgement for a notification)."""
        if server not in self.servers:
            raise ControlError(f"'{server}' is not an SDK server of this session")
        fields: Body = {"server_name": server, "message": message}
        answer = await self.control.request("mcp_message", fields, MCP_MESSAGE_TIMEOUT)
        response = answer.get("mcp_response")
        if not isinstance(response, dict):
            raise ControlError("the SDK's mcp_message answer has no mcp_response object")
        return cast(dict[str, Any], response)
