"""What the Claude Agent SDKs' control requests do to a headless session (docs/sdk.md).

`initialize` takes the SDK's system prompt and names its in-process MCP servers; `interrupt` cancels the running
turn; `set_permission_mode` and `set_model` apply from the next request; `mcp_status` lists the servers;
`rewind_files` puts the files back as they were at a user message (sdk_rewind.py).
`SdkAsk` puts the permission question to the SDK's `can_use_tool` callback, and `SdkRelay` carries an SDK
server's MCP messages (`mcp_message`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, cast

import anyio

from sprout_agent.core.claude_rules import saved_rule, translate
from sprout_agent.core.errors import SproutError
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.core.tool_names import sdk_tool_name
from sprout_agent.faces.sdk.control import Body, Control, ControlError, Handler
from sprout_agent.faces.sdk.sdk_hooks import SdkHooks, tool_input
from sprout_agent.faces.sdk.sdk_rewind import ENABLE, SdkRewind
from sprout_agent.faces.slash_commands import switch_to
from sprout_agent.session.assembly import session_system_prompt
from sprout_agent.session.prepared import Prepared, prepare
from sprout_agent.session.runtime import Runtime
from sprout_agent.trust.env_flags import env_flag

# How long a permission question waits for the SDK's callback (it may ask a person): then the call is refused.
ASK_TIMEOUT = 600.0
# Claude Code's Bash input field for a command run outside the sandbox: in the re-run request, what the allow sets.
DISABLE_SANDBOX = "dangerouslyDisableSandbox"
# How long one MCP message to an SDK server waits (the pool's own call timeout usually ends it first).
MCP_MESSAGE_TIMEOUT = 600.0
_STATES = {"running": "connected", "starting": "pending", "pending": "pending", "needs login": "needs-auth"}


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
        self.settled = anyio.Event()  # the first `initialize` has been answered (or refused)
        self.callbacks: SdkHooks | None = None  # the SDK's hook callbacks (set by the face: they need the channel)
        self.forward_subagent_text: Callable[[], None] | None = None  # `forwardSubagentText` (set by the face)
        enabled = env_flag(prepared.inherited_env, ENABLE)
        self.rewind = SdkRewind(enabled, lambda: self.runtime, lambda: self.turn is not None)

    def handlers(self) -> dict[str, Handler]:
        return {
            "initialize": self.initialize,
            "interrupt": self.interrupt,
            "set_permission_mode": self.set_permission_mode,
            "set_model": self.set_model,
            "mcp_status": self.mcp_status,
            "rewind_files": self.rewind.rewind_files,
        }

    def attach(self, runtime: Runtime) -> None:
        """The running session (its hooks were given `callbacks` at construction: the face passes them)."""
        self.runtime = runtime
        self._apply_system()
        if self.callbacks is not None:
            self.callbacks.runtime = runtime
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
        try:
            return self._initialize(request)
        finally:
            self.settled.set()

    def _initialize(self, request: Body) -> Body:
        if self.initialized:
            raise ControlError("already initialized")
        hooks = self._register_hooks(request.get("hooks"))
        self._check_json_schema(request.get("jsonSchema"))
        self.initialized = True
        replace, append = request.get("systemPrompt"), request.get("appendSystemPrompt")
        if replace is not None or append is not None:
            self.system = (_prompt_text(replace, "systemPrompt"), _prompt_text(append, "appendSystemPrompt"))
            if self.runtime is not None:
                self._apply_system()
        if request.get("forwardSubagentText") is True and self.forward_subagent_text is not None:
            self.forward_subagent_text()  # the Python SDK's option: a subagent's text goes out too
        applied = self._startup_config(request)
        self._check_sdk_servers(request.get("sdkMcpServers"))
        model = self.prepared.model
        return {
            **applied,
            "commands": [],
            "agents": [
                {"name": a.name, "description": a.description, "model": a.model or "inherit"}
                for a in self.prepared.definitions.agents
            ],
            "output_style": self.prepared.style[0],
            "available_output_styles": sorted({"default", self.prepared.style[0]}),
            "models": [{"value": model, "displayName": model, "description": "the session's model"}],
            "account": {},
            "pid": os.getpid(),
            **hooks,
        }

    def _register_hooks(self, raw: object) -> Body:
        """The SDK's hook callbacks, run from now on; the answer's fields say they were (docs/sdk.md)."""
        if not raw:
            return {"hook_on_failure_supported": True}
        if self.callbacks is None:
            raise ControlError("hook callbacks need the SDK's control channel (--input-format stream-json)")
        try:
            self.callbacks.register(raw)
        except ValueError as error:
            raise ControlError(str(error)) from None
        return {"hooks_applied": True, "hook_on_failure_supported": True}

    def _apply_system(self) -> None:
        if self.system is None or self.runtime is None:
            return
        self.runtime.agent.use_system_prompt(session_system_prompt(self.prepared, *self.system))

    def _startup_config(self, request: Body) -> Body:
        """What the TypeScript SDK sends in `initialize` rather than on the command line: its in-process servers
        (`sdkMcpServers`, only ever here), and by default its other servers (`mcpServers`, with
        `--await-initialize`), and on request `disallowedTools` and `additionalDirectories`. Applied as the same
        flags would be (the session is prepared again with them), and confirmed with the `*_applied` fields the
        SDK checks; one that came too late (the session runs already) is confirmed as not applied."""
        sdk_servers = _names(request.get("sdkMcpServers"), "sdkMcpServers")
        given, deny, dirs, agents, settings = (
            request.get("mcpServers"),
            request.get("disallowedTools"),
            request.get("additionalDirectories"),
            request.get("agents"),
            request.get("settings"),  # settingsDelivery "initialize": read as --settings (claude_settings.py)
        )
        if not sdk_servers and given is None and deny is None and dirs is None and not agents and settings is None:
            return {}
        fields = {
            "mcp_servers_applied": given,
            "disallowed_tools_applied": deny,
            "additional_directories_applied": dirs,
            "settings_applied": settings,
        }
        if self.runtime is not None:
            self.emit(Notice("initialize came after the session started: its servers and settings are not applied"))
            return {key: False for key, value in fields.items() if value is not None}
        if given is not None and not isinstance(given, dict):
            raise ControlError("initialize: mcpServers must be an object")
        configured = {s.name for s in self.prepared.loaded.servers}
        servers = {**{n: {"type": "sdk"} for n in sdk_servers if n not in configured}, **cast(Body, given or {})}
        options = self.prepared.options
        rules = translate(_names(deny, "disallowedTools"), deny=True)
        for warning in rules.warnings:
            self.emit(Notice(warning.removeprefix("warning: "), "warning"))
        added = tuple((options.cwd / directory).resolve() for directory in _names(dirs, "additionalDirectories"))
        changed = replace(
            options,
            mcp_configs=(*options.mcp_configs, *([json.dumps({"mcpServers": servers})] if servers else [])),
            deny_tools=(*options.deny_tools, *rules.patterns),
            claude_rules=options.claude_rules or deny is not None,
            add_dirs=(*options.add_dirs, *added),
            agents_json=(*options.agents_json, *([json.dumps(agents)] if agents else [])),
            settings=(*options.settings, *_settings_value(settings)),
        )
        try:
            self.prepared = prepare(changed, self.prepared.locations, self.prepared.inherited_env)
        except SproutError as error:
            raise ControlError(f"initialize: {error}") from None
        return {key: True for key, value in fields.items() if value is not None}

    def _check_json_schema(self, schema: object) -> None:
        """The TypeScript SDK sends its `outputFormat` schema twice: as `--json-schema` and in `initialize`. The
        flag's is the one the session runs with; one given only here, or another one, would be silently dropped."""
        if schema is None:
            return
        output = self.prepared.output
        if output is None or output.schema != schema:
            raise ControlError(
                "structured output (jsonSchema) must come as --json-schema, the same schema (docs/sdk.md)"
            )

    def _check_sdk_servers(self, names: object) -> None:
        if not isinstance(names, list):
            return  # the Python SDK names its servers only in --mcp-config
        configured = {s.name for s in self.prepared.loaded.servers if s.transport == "sdk"}
        offered = {str(n) for n in cast(list[object], names)}
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


def _rerun_fields(why: str, use: ToolUse) -> Body:
    """The re-run request's own fields: the input to flip, and what stopped the call (read from its output)."""
    return {
        "input": {**use.input, DISABLE_SANDBOX: False},
        "title": "Run this command again outside the sandbox?",
        "decision_reason": (
            f"the OS sandbox stopped it (its output reads as: {why}); to run it again outside the sandbox, allow "
            f"with updatedInput {DISABLE_SANDBOX}: true and the rest of the input unchanged; any other allow keeps "
            "the sandboxed result"
        ),
    }


def _names(value: object, field: str) -> list[str]:
    """A list of strings from `initialize` (None: none)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in cast(list[object], value)):
        raise ControlError(f"initialize: {field} must be a list of strings")
    return cast(list[str], value)


def _prompt_text(value: object, field: str) -> str | None:
    """A system prompt field: a string, or the TypeScript SDK's list of strings (joined by blank lines)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value)):
        return "\n\n".join(cast(list[str], value))
    raise ControlError(f"initialize: {field} must be a string or a list of strings")


class SdkAsk:
    """The `Ask` of a session run by an SDK with `--permission-prompt-tool stdio`: its `can_use_tool` callback
    answers as the person would. A deny with `interrupt` also cancels the turn.

    The question whether to re-run a call the OS sandbox stopped outside it is a request of its own: its input is
    the call's with `dangerouslyDisableSandbox: false` (Claude Code's Bash field), and only an allow whose
    updatedInput sets it to true, the rest unchanged, lets the command out. A plain allow cannot: the Python SDK
    echoes the input it was sent as updatedInput, the TypeScript SDK sends none (docs/sdk.md#the-sandbox-re-run)."""

    def __init__(
        self,
        control: Control,
        cancel_turn: Callable[[], None],
        emit: Callable[[Event], None] | None = None,
    ) -> None:
        self.control = control
        self.cancel_turn = cancel_turn
        self.emit = emit  # says why an answer to the re-run request kept the call in the sandbox

    async def __call__(self, spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        fields: Body = {
            "tool_name": sdk_tool_name(spec.server, spec.tool),
            "input": use.input,
            "tool_use_id": use.id,
            "permission_suggestions": suggested_rules(spec, use),
        }
        if outside_sandbox is not None:
            fields |= _rerun_fields(outside_sandbox, use)
        try:
            answer = await self.control.request("can_use_tool", fields, ASK_TIMEOUT)
        except ControlError as error:
            return Decision("deny", f"no answer from the SDK's permission callback: {error}")
        if outside_sandbox is not None and answer.get("behavior") == "allow":
            return self._rerun_decision(answer, use)
        decision = self._decision(answer, use)
        accepted = answer.get("updatedPermissions")
        if (
            decision.kind == "once"
            and fields["permission_suggestions"]
            and accepted == fields["permission_suggestions"]
        ):
            return replace(decision, keep=True)  # our suggestion, accepted as sent: kept as an "always" is
        return decision

    def _decision(self, answer: Body, use: ToolUse) -> Decision:
        if answer.get("behavior") == "allow":
            updated = answer.get("updatedInput")
            if updated is not None and (updated := tool_input(updated)) is None:
                return Decision("deny", "the permission callback's updatedInput is not a JSON object of valid text")
            # The call runs with the callback's input, a new call the policy decides again; the loop makes the
            # history show the call as it ran.
            return Decision("once", updated_input=updated)
        message = str(answer.get("message") or "")
        if answer.get("interrupt") is True:
            self.cancel_turn()
            return Decision("cancel", message)
        return Decision("deny", message)

    def _rerun_decision(self, answer: Body, use: ToolUse) -> Decision:
        """An allow to the re-run request: outside the sandbox only when its updatedInput says so."""
        updated = tool_input(answer.get("updatedInput"))
        if updated is not None and updated.get(DISABLE_SANDBOX) is True:
            if {k: v for k, v in updated.items() if k != DISABLE_SANDBOX} == use.input:
                return Decision("once", outside_sandbox=True)
            why = "its updatedInput also changed the call, and only the call the sandbox stopped is re-run"
        else:
            why = f"only an updatedInput with {DISABLE_SANDBOX}: true runs it outside the sandbox"
        if self.emit is not None:
            self.emit(Notice(f"the permission callback's allow kept call {use.id} in the sandbox: {why}", "warning"))
        return Decision("deny", why)


def suggested_rules(spec: ToolSpec, use: ToolUse) -> list[Body]:
    """can_use_tool's `permission_suggestions`, as Claude Code sends them: the rule an "always" would keep for this
    call (core/claude_rules.saved_rule), for `.claude/settings.local.json`; none when it would last the session only.
    Only this suggestion, sent back unchanged in `updatedPermissions`, is kept: an SDK cannot name a wider rule."""
    rule = saved_rule(spec.server, spec.tool, use.input)
    if rule is None:
        return []
    name, _, content = rule.partition("(")
    value: Body = {"toolName": name} | ({"ruleContent": content.removesuffix(")")} if content else {})
    return [{"type": "addRules", "rules": [value], "behavior": "allow", "destination": "localSettings"}]


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


def _settings_value(settings: object) -> tuple[str, ...]:
    """`initialize.settings` as a `--settings` value: an object as its JSON, a string (JSON or a path) as it is."""
    if settings is None:
        return ()
    if isinstance(settings, dict):
        return (json.dumps(settings),)
    if isinstance(settings, str):
        return (settings,)
    raise ControlError("initialize: settings must be an object or a string")
