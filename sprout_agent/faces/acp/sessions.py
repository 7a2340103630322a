"""One ACP session: its own runtime (servers, model, agent), its renderer, its turn and its permission asks."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import cast

import anyio
import anyio.to_thread

from sprout_agent.checkpoints.turn_diff import turn_patches
from sprout_agent.core.agent import Agent
from sprout_agent.core.errors import SproutError
from sprout_agent.core.events import Notice, changes_summary
from sprout_agent.core.messages import Image, ToolUse
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolHost, ToolSpec
from sprout_agent.core.stop_reasons import TurnStop
from sprout_agent.faces.acp import choices, commands
from sprout_agent.faces.acp.editor_host import EditorHost, EditorOffers
from sprout_agent.faces.acp.updates import Updates
from sprout_agent.faces.acp.wire import INTERNAL_ERROR, INVALID_PARAMS, Connection, Json, RpcError
from sprout_agent.faces.slash_commands import switch_to
from sprout_agent.mcp.prompts import PromptFailed
from sprout_agent.mcp.sampling import SamplingRequest
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.runtime import Runtime, new_session_id, open_runtime

# The loop's stop reasons as ACP names them; anything else ended the turn normally.
STOP_REASONS: dict[TurnStop, str] = {"max_tokens": "max_tokens", "max_turns": "max_turn_requests", "refusal": "refusal"}
PERMISSION_OPTIONS: tuple[Json, ...] = (
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow this tool", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
)
# Option ids of their own: an editor that answers the ordinary question by id (a remembered "allow_always" for the
# tool, an auto-approver) never picks one of these; only an answer to this question lets a command out.
ESCALATION_OPTIONS: tuple[Json, ...] = (
    {"optionId": "outside_sandbox_once", "name": "Run it outside the sandbox once", "kind": "allow_once"},
    {"optionId": "outside_sandbox_always", "name": "Always for this exact command", "kind": "allow_always"},
    {"optionId": "keep_sandboxed", "name": "Keep the sandboxed result", "kind": "reject_once"},
)
_DECISIONS = {"allow_once": "once", "allow_always": "always"}
_ESCALATION_DECISIONS = {"outside_sandbox_once": "once", "outside_sandbox_always": "always"}
SAMPLING_OPTIONS: tuple[Json, ...] = (
    {"optionId": "allow_once", "name": "Let it use the model", "kind": "allow_once"},
    {"optionId": "reject_once", "name": "Refuse", "kind": "reject_once"},
)


class AcpSession:
    def __init__(self, prepared: Prepared, conn: Connection, offers: EditorOffers | None = None) -> None:
        """The id is known at once (a resumed session keeps its own); the runtime starts in `own`. `offers`: the
        editor's files and terminals, which the built-in dev tools then go through."""
        self.prepared = prepared
        self.offers = offers or EditorOffers()
        self.session_id = new_session_id(prepared)
        self.updates = Updates(self.session_id, lambda params: conn.notify("session/update", params), _cwd(prepared))
        self._conn = conn
        self._runtime: Runtime | None = None  # while the session's runtime is open
        self._settled = anyio.Event()  # the runtime is open, or failed to open
        self._failure = ""
        self._turn: anyio.CancelScope | None = None
        self._open = anyio.CancelScope()  # cancelled by `close`: the runtime then ends in order
        self._end_reason = "close"  # what `_SessionEnd` is told: close, or signal when the agent was signalled
        self.closed = anyio.Event()
        self.busy = False
        self._samplings = 0  # numbers the sampling questions' tool call ids
        # The model picker's choices: the session's models now, all the models we know once the runtime is up.
        options = prepared.options
        self.models = choices.unique((prepared.model, prepared.settings.model, options.fallback_model or ""))

    async def own(self) -> None:
        """Runs the session's runtime until cancelled (the client went away); its servers end with it."""
        try:
            async with open_runtime(
                self.prepared,
                self.updates.emit,
                ask=self._ask,
                session_id=self.session_id,
                approve_sampling=self.approve_sampling,
                tool_host=self._tool_host,
            ) as rt:
                agent, compactor = rt.agent, rt.agent.compactor
                self.updates.usage_source = lambda: (compactor.window if compactor else 0, agent.ledger.cost)
                self._runtime = rt
                self._settled.set()
                if prompts := rt.pool.prompts():  # the servers are up now: their prompts join our commands
                    self.updates.send(commands.available_commands(prompts, rt.prepared.definitions.commands))
                self._know_models()
                with self._open:
                    await anyio.sleep_forever()
                await rt.agent.end_session(self._end_reason)
        except Exception as error:  # reported to the next prompt; the other sessions go on
            self._failure = _describe(error)
        finally:
            self._runtime = None
            self._settled.set()
            self.closed.set()

    # --- the editor's pickers: the mode and the model --------------------------------------------------------

    def mode(self) -> str:
        """The listed mode the session's permission policy is in (the command line's until the runtime is up)."""
        policy = self._runtime.agent.permit if self._runtime is not None else None
        name = policy.permission_mode if isinstance(policy, Policy) else self.prepared.permission_mode
        return choices.shown_mode(name)

    def model(self) -> str:
        return self._runtime.agent.model.name if self._runtime is not None else self.prepared.model

    def config_options(self) -> list[Json]:
        return choices.config_options(self.mode(), self.model(), self.models)

    async def set_mode(self, raw: object) -> None:
        """The session-level switch the SDK's set_permission_mode uses too (`Policy.set_mode`), from the next
        call on; the editor hears of it (`current_mode_update`, `config_option_update`)."""
        mode = choices.listed_mode(raw)
        policy = (await self.agent()).permit
        if not isinstance(policy, Policy):
            raise RpcError(INTERNAL_ERROR, "this session has no permission policy to switch")
        policy.set_mode(mode)
        self.updates.send({"sessionUpdate": "current_mode_update", "currentModeId": self.mode()})
        self.options_changed()

    async def set_option(self, config_id: object, value: object) -> list[Json]:
        if config_id == choices.MODE_OPTION:
            await self.set_mode(value)
        elif config_id == choices.MODEL_OPTION:
            await self.set_model(value)
        else:
            raise RpcError(INVALID_PARAMS, f"Invalid params: no config option {str(config_id)[:80]!r}")
        return self.config_options()

    async def set_model(self, raw: object) -> None:
        """The model picker: one of the listed models, through the session's one model switch (/model's)."""
        if not isinstance(raw, str) or raw not in self.models:
            raise RpcError(INVALID_PARAMS, f"Invalid params: {str(raw)[:80]!r} is not one of the listed models")
        await self.agent()
        runtime = self._runtime
        if runtime is None:  # closed meanwhile
            raise RpcError(INTERNAL_ERROR, "the session has ended")
        try:
            _, notes = await switch_to(runtime, raw, "model")
        except ValueError as error:
            raise RpcError(INVALID_PARAMS, f"Invalid params: cannot switch: {error}") from None
        for note in notes:
            self.updates.emit(Notice(note, "warning"))  # shown with the next prompt
        self.options_changed()

    def options_changed(self) -> None:
        self.updates.send({"sessionUpdate": "config_option_update", "configOptions": self.config_options()})

    def _know_models(self) -> None:
        """Every model we know joins the picker once the runtime is up (anthropic is loaded by then)."""
        from sprout_agent.model.client import known_models

        known = choices.unique((*self.models, *known_models(self.prepared.settings.provider)))
        if known != self.models:
            self.models = known
            self.options_changed()

    def _tool_host(self, pool: ToolHost) -> ToolHost:
        return EditorHost.over(
            pool, self.prepared, self.offers, self._conn, self.session_id, self.updates.show_terminal
        )

    def close(self, reason: str = "close") -> None:
        """Ends the session with `_SessionEnd` (told `reason`), then its servers; `closed` is set once they are
        gone."""
        self._end_reason = reason
        self._open.cancel()

    async def agent(self) -> Agent:
        await self._settled.wait()
        if self._runtime is None:
            raise RpcError(INTERNAL_ERROR, f"the session could not start: {self._failure or 'stopped'}")
        return self._runtime.agent

    def prompt(self, text: str, images: tuple[Image, ...] = ()) -> Awaitable[str]:
        """Claims the session for one turn now, so a cancel that follows finds the turn before it starts."""
        if self.busy:
            raise RpcError(INVALID_PARAMS, "this session is already running a prompt: cancel it or wait")
        self.busy = True
        self._turn = anyio.CancelScope()  # a scope cancelled before it is entered cancels at its first await
        return self._prompt(text, images, self._turn)

    async def _prompt(self, text: str, images: tuple[Image, ...], scope: anyio.CancelScope) -> str:
        """Runs the turn; returns the ACP stop reason. Every update is sent before this returns."""
        stop = "cancelled"  # unless the turn runs to its end
        try:
            with scope:
                agent = await self.agent()
                self.updates.begin()
                stop = await self._run(agent, text, images)
        except SproutError as error:
            raise RpcError(INTERNAL_ERROR, str(error)) from None
        finally:
            self.updates.end()
            self._turn = None
            self.busy = False
        return stop

    async def _run(self, agent: Agent, text: str, images: tuple[Image, ...]) -> str:
        command = commands.parse(text) if not images else None
        if command is not None and self._runtime is not None:
            model = self.model()
            self.updates.message(await commands.run(self._runtime, *command))
            if self.model() != model:  # /model switched it: the picker follows
                self.models = choices.unique((*self.models, self.model()))
                self.options_changed()
            return "end_turn"
        if self._runtime is not None:
            try:
                custom = commands.custom_turn(self._runtime.prepared.definitions.commands, text) if not images else None
                text = custom or await commands.prompt_turn(self._runtime.pool, text) or text
            except PromptFailed as error:
                self.updates.message(str(error))
                return "end_turn"
        result = await agent.run_turn(text, images)
        await self._show_changes()
        if result.stop_reason == "budget":
            self.updates.message("\n\n(stopped: the session's budget is spent)")
        return STOP_REASONS.get(result.stop_reason, "end_turn")

    async def _show_changes(self) -> None:
        """The turn's diff, commands' changes included, as one completed edit the editor shows (docs/rewind.md)."""
        tracker = self._runtime.checkpoints if self._runtime is not None else None
        turn = tracker.turns[-1] if tracker is not None and tracker.turns else None
        if tracker is None or turn is None or turn.kind != "turn" or not turn.files:
            return
        patches = await anyio.to_thread.run_sync(turn_patches, await tracker.stores(), turn)
        self.updates.turn_changes(turn.number, changes_summary(len(turn.files), turn.added, turn.removed), patches)

    def cancel(self) -> None:
        if self._turn is not None:
            self._turn.cancel()

    async def _ask(self, spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        """`--permission-mode ask`: the editor asks the user; a cancelled or failed request is a rejection.

        `outside_sandbox`: the question is whether to re-run a call the sandbox stopped outside it."""
        call = self.updates.open_call(use.id)
        fields: Json = self.updates.tool_call_fields(call) if call is not None else {"title": spec.name}
        params: Json = {"sessionId": self.session_id, "toolCall": {**fields, "status": "pending"}}
        params["options"] = list(PERMISSION_OPTIONS if outside_sandbox is None else ESCALATION_OPTIONS)
        if outside_sandbox is not None:  # the command stays the title; the reason, from its output, is content
            shown = cast(Json, params["toolCall"])
            why = f"Failed in the sandbox; its output reads as: {outside_sandbox[:300]}. Run it again outside it?"
            title = f"Outside the sandbox: {shown.get('title', spec.name)}"
            params["toolCall"] = {**shown, "title": title, "content": [_text_content(why)]}
        try:
            answer = await self._conn.request("session/request_permission", params)
        except RpcError as error:
            return Decision("deny", f"the editor could not ask: {error.message}")
        outcome = cast(Json, answer).get("outcome") if isinstance(answer, dict) else None
        chosen = cast(Json, outcome).get("optionId") if isinstance(outcome, dict) else None
        rerun = outside_sandbox is not None
        # The re-run question's options say "outside the sandbox": picking one is the answer that says so.
        kind = (_ESCALATION_DECISIONS if rerun else _DECISIONS).get(chosen) if isinstance(chosen, str) else None
        return Decision("once" if kind == "once" else "always", outside_sandbox=rerun) if kind else Decision("deny")

    async def approve_sampling(self, request: SamplingRequest) -> bool:
        """A server's model call (ACP has no question of its own for it): the editor's permission question, asked
        only while a prompt runs (between prompts nobody is looking); anything but "allow" refuses."""
        if not self.busy:
            return False
        self._samplings += 1
        about = f"{request.summary()}; up to {request.max_tokens} tokens out, no tools, billed to you"
        call: Json = {
            "toolCallId": f"sprout_sampling_{self._samplings}",
            "title": f"MCP server '{request.server}' asks to use the model",
            "kind": "other",
            "status": "pending",
            "content": [_text_content(about)],
        }
        params: Json = {"sessionId": self.session_id, "toolCall": call, "options": list(SAMPLING_OPTIONS)}
        try:
            answer = await self._conn.request("session/request_permission", params)
        except RpcError:
            return False
        outcome = cast(Json, answer).get("outcome") if isinstance(answer, dict) else None
        return isinstance(outcome, dict) and cast(Json, outcome).get("optionId") == "allow_once"


def _cwd(prepared: Prepared) -> str:
    return str(prepared.options.cwd)


def _describe(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup):
        error = cast("BaseExceptionGroup[BaseException]", error).exceptions[0]
    return str(error) or type(error).__name__


def _text_content(text: str) -> Json:
    return {"type": "content", "content": {"type": "text", "text": text}}
