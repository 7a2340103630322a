"""Non-interactive runs: prompts from -p, stdin or JSON lines; the outcome as text, json or stream-json.

Whatever ends the run (an answer, an API error, a signal), `finish` reports it and picks the exit code. The JSON
sink and the SDK's session are imported where a run asks for them: a text `-p` reaches its first request without.
"""

from __future__ import annotations

import io
import sys
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from sprout_agent.config.consent import held_back_notice
from sprout_agent.config.options import SDK_MARK
from sprout_agent.config.provider import provider_record
from sprout_agent.core.agent import TurnResult
from sprout_agent.core.errors import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    ApiError,
    SproutError,
    UsageError,
    exit_code_for_stop,
    sprout_error_in,
)
from sprout_agent.core.events import Event, Notice, TurnChanges, TurnFinished
from sprout_agent.core.messages import Image, Usage
from sprout_agent.core.stop_reasons import StopReason
from sprout_agent.core.tool_names import sdk_tool_name
from sprout_agent.faces.lifecycle import open_face
from sprout_agent.faces.sdk.control import Control, LineWriter, Skipped, prompts_of, stdin_lines
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.faces.warm.title import name_run
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.runtime import Runtime, new_session_id, open_runtime
from sprout_agent.trust.untrusted import printable

if TYPE_CHECKING:  # imported on use, for speed: the SDK's session pulls in rewind and checkpoints (~15 ms at start)
    from sprout_agent.faces.headless.jsonl import JsonlSink
    from sprout_agent.faces.sdk.sdk_session import SdkSession


@dataclass(frozen=True, slots=True)
class Outcome:
    """How the run has ended so far: what `finish` reports. Each step of the run replaces it whole."""

    code: int = EXIT_OK
    stop_reason: StopReason = "end_turn"
    text: str = ""  # the last turn's answer
    turns: int = 0  # model requests, while no agent exists to count them
    errors: tuple[str, ...] = ()
    fatal: str | None = None  # the one line for stderr
    ran_a_turn: bool = False
    reported: bool = False  # the last thing the run did was answer a turn (stream-json wrote its result)
    api_failed: bool = False  # the model API failed (after retries): Claude Code's result shape for it
    api_status: int | None = None  # its last HTTP status
    structured: Mapping[str, object] | None = None  # --json-schema: the last turn's validated answer

    def answered(self, result: TurnResult) -> Outcome:
        """A turn ran to its end; its own `result` line said so (a later failure says more)."""
        code = exit_code_for_stop(result.stop_reason)
        turns = self.turns + result.turns
        return replace(
            self,
            code=code,
            stop_reason=result.stop_reason,
            text=result.text,
            turns=turns,
            ran_a_turn=True,
            reported=True,
            structured=result.structured,
            errors=(*self.errors, result.error) if result.error else self.errors,
            fatal=result.error or self.fatal,  # no valid structured output: one line on stderr
        )

    def sdk_interrupted(self) -> Outcome:
        """The SDK's interrupt ended a turn; the session goes on with the next prompt."""
        return replace(self, text="", stop_reason="interrupted", ran_a_turn=True, reported=True)

    def skipped(self, reason: str) -> Outcome:
        """A stdin line was not run: the run's last result must still say how it ended."""
        return replace(self, errors=(*self.errors, reason), reported=False)

    def failed(self, error: SproutError) -> Outcome:
        line = str(error)
        api_failed = isinstance(error, ApiError)
        return replace(
            self,
            code=error.exit_code,
            stop_reason="error",
            text=line if api_failed else "",  # as Claude Code: the API's failure is the result's text
            reported=False,
            errors=(*self.errors, line),
            fatal=line,
            api_failed=api_failed,
            api_status=error.status if isinstance(error, ApiError) else None,
        )

    def interrupted(self, code: int) -> Outcome:
        why = "interrupted by " + ("SIGTERM" if code == EXIT_SIGTERM else "SIGINT")
        return replace(self, code=code, stop_reason="interrupted", text="", reported=False, errors=(*self.errors, why))

    def crashed(self, error: Exception) -> Outcome:
        why = f"internal error: {type(error).__name__}: {error}"
        return replace(self, code=EXIT_RUNTIME, stop_reason="error", reported=False, errors=(*self.errors, why))


class Headless:
    """One non-interactive session; its `outcome` is what `finish` reports."""

    def __init__(self, prepared: Prepared) -> None:
        options = prepared.options
        self.prepared = prepared
        self.started = time.monotonic()
        self.session_id = new_session_id(prepared)
        self.text_mode = options.output_format == "text"
        self.lines = LineWriter(sys.stdout)  # the sink and the control channel share it: whole lines, never mixed
        self.jsonl: JsonlSink | None = None
        if not self.text_mode:
            from sprout_agent.faces.headless.jsonl import JsonlSink

            stream = options.output_format == "stream-json"
            self.jsonl = JsonlSink(self.lines.as_text_io(), stream=stream, progress=options.verbose)
            self.jsonl.forward_subagent_text = options.forward_subagent_text
        # Progress goes to stderr: always for text, only with -v for json (stdout is theirs). Never for stream-json:
        # there --verbose is what Claude Code requires of it and the SDKs always pass, and whoever reads the lines
        # has every event already (an SDK's stderr callback must not get our progress). In text mode the same
        # sink prints each turn's answer on stdout.
        show_progress = self.text_mode or (options.verbose and options.output_format == "json")
        answers = sys.stdout if self.text_mode else None
        self.renderer = (
            TerminalRenderer(interactive=False, verbose=options.verbose, stdout=sys.stderr, answers=answers)
            if show_progress
            else None
        )
        self.runtime: Runtime | None = None
        self.outcome = Outcome()
        # stream-json input: stdin is read while a turn runs, and the SDKs' control requests are answered.
        self.sdk: SdkSession | None = None
        self.control: Control | None = None
        if options.input_format == "stream-json":
            from sprout_agent.faces.sdk.sdk_hooks import SdkHooks
            from sprout_agent.faces.sdk.sdk_session import SdkSession

            self.sdk = SdkSession(prepared, self.emit)
            self.control = Control(self.lines, self.sdk.handlers(), note=_say)
            self.sdk.callbacks = SdkHooks(self.control, self.emit)
            self.sdk.forward_subagent_text = self._forward_subagent_text

    def _forward_subagent_text(self) -> None:
        if self.jsonl is not None:
            self.jsonl.forward_subagent_text = True

    def emit(self, event: Event) -> None:
        if self.renderer is not None:
            self.renderer(event)
        if self.jsonl is not None:
            self.jsonl(event)

    async def main(self) -> None:
        async with open_face() as life:
            if self.control is not None:
                life.group.start_soon(self.control.run, stdin_lines(_stdin_chunk))
                await self._await_initialize()
            self._config_notices()
            try:
                async with open_runtime(
                    self.prepared, self.emit, session_id=self.session_id, **self._sdk_parts()
                ) as runtime:
                    self.runtime = runtime
                    name_run(runtime.session_id, self.prepared.options.cwd)  # in ps and top
                    if self.sdk is not None:
                        self.sdk.attach(runtime)
                    await life.turns(partial(self._turns, runtime), partial(runtime.agent.end_session, "signal"))
            except Exception as error:
                found = sprout_error_in(error)  # task groups wrap what they raise (e.g. --require-servers)
                if found is None:
                    raise
                self.outcome = self.outcome.failed(found)
        if life.exit_code is not None:
            self.outcome = self.outcome.interrupted(life.exit_code)

    async def _await_initialize(self) -> None:
        """Driven by an SDK (or told `--await-initialize`), the session starts once the SDK's first line is read and,
        when that is `initialize`, answered: the TypeScript SDK names servers only there (sdk_session.py). The
        wait is the SDK's first write, which it makes at once; a script that sends a prompt first starts then."""
        assert self.control is not None and self.sdk is not None
        if not (self.prepared.options.await_initialize or SDK_MARK in self.prepared.inherited_env):
            return
        await self.control.first_line.wait()
        if self.control.began_with_initialize:
            await self.sdk.settled.wait()
            self.prepared = self.sdk.prepared

    def _config_notices(self) -> None:
        if self.prepared.options.verbose:
            read = ", ".join(str(p) for p in self.prepared.loaded.files_read) or "none"
            self.emit(Notice(f"config files read: {read}"))
        for notice in (*self.prepared.loaded.notices, *self.prepared.held_back_notices()):
            self.emit(Notice(notice, "warning"))

    def _sdk_parts(self) -> dict[str, Any]:
        """The SDK's permission callback (with `--permission-prompt-tool stdio`), its in-process servers and its
        hook callbacks."""
        if self.control is None or self.sdk is None:
            return {}
        from sprout_agent.faces.sdk.sdk_session import SdkAsk, SdkRelay

        sdk_servers = [s.name for s in self.prepared.loaded.servers if s.transport == "sdk"]
        parts: dict[str, Any] = {"sdk": SdkRelay(self.control, sdk_servers), "callbacks": self.sdk.callbacks}
        if self.prepared.options.permission_prompt_tool == "stdio":
            parts["ask"] = SdkAsk(self.control, self.sdk.cancel_turn, self.sdk.emit)
        return parts

    async def _turns(self, runtime: Runtime) -> None:
        self._init(runtime)
        async for queued in self._prompts():
            if isinstance(queued, Skipped):
                self._skipped(queued.reason, runtime)
                continue
            prompt, attachments = queued
            result = await self._turn(runtime, prompt, attachments)
            if result is None:  # the SDK's interrupt: the session goes on with the next prompt
                self.outcome = self.outcome.sdk_interrupted()
                continue
            self.outcome = self.outcome.answered(result)
            if self.outcome.code != EXIT_OK:
                break  # the rest of a stream-json input is left unread: the session cannot go on

    def _skipped(self, reason: str, runtime: Runtime) -> None:
        """A stdin line over the cap: not run, its own error `result`, and the session goes on."""
        self.outcome = self.outcome.skipped(reason)
        if self.jsonl is not None:
            self.jsonl.skipped(reason, runtime.agent.ledger.cost)

    async def _turn(self, runtime: Runtime, prompt: str, attachments: tuple[Image, ...]) -> TurnResult | None:
        """One turn; None when the SDK interrupted it (its `result` line says "interrupted")."""
        result, ledger, started = None, runtime.agent.ledger, time.monotonic()
        before = ledger.usage
        line_uuid = self._replay(prompt, attachments)
        tracker = runtime.checkpoints
        number = tracker.turns[-1].number + 1 if tracker is not None and tracker.turns else 1  # what it will be
        with anyio.CancelScope() as scope:
            if self.sdk is not None:
                self.sdk.turn = scope
            result = await runtime.agent.run_turn(prompt, attachments)
        if self.sdk is not None:
            self.sdk.turn = None
            if line_uuid is not None and tracker is not None:
                self.sdk.rewind.remember(line_uuid, number)
        if scope.cancelled_caught:
            seconds = time.monotonic() - started
            interrupted = TurnFinished("interrupted", "", 0, ledger.usage - before, ledger.cost, seconds)
            self.emit(replace(interrupted, changes=last_turn_changes(runtime)))
        return result

    def _replay(self, prompt: str, attachments: tuple[Image, ...]) -> str | None:
        """--replay-user-messages: the prompt echoed as a `user` line; its uuid names the turn (SDK rewind_files)."""
        if self.jsonl is None or not self.prepared.options.replay_user_messages:
            return None
        line_uuid = str(uuid.uuid4())
        self.jsonl.replay(prompt, attachments, line_uuid)
        return line_uuid

    async def _prompts(self) -> AsyncIterator[tuple[str, tuple[Image, ...]] | Skipped]:
        options = self.prepared.options
        if options.prompt is not None:
            yield options.prompt, ()
        if options.input_format != "stream-json":
            return
        assert self.control is not None
        given = options.prompt is not None
        async for message in prompts_of(self.control):
            given = given or not isinstance(message, Skipped)
            yield message
        if not given:
            raise UsageError("no user message on stdin (--input-format stream-json)")

    def _init(self, runtime: Runtime) -> None:
        if self.jsonl is None:
            return
        from sprout_agent.faces.headless.jsonl import InitInfo, ServerInfo

        agent = runtime.agent
        hooks = [(spec.server, spec.tool) for spec in agent.hooks.active()]
        statuses = runtime.pool.status()
        servers = [ServerInfo(s.name, s.state, s.tool_count, s.hook_count, s.last_error, s.transport) for s in statuses]
        held_back = self.prepared.held_back
        if held_back is not None:
            for server in held_back.pending:
                notice = held_back_notice(server, held_back.verdicts[server.name])
                servers.append(ServerInfo(server.name, "not approved", 0, 0, notice, server.transport))
        self.jsonl.init(
            InitInfo(
                session_id=runtime.session_id,
                model=agent.model.name,
                cwd=str(self.prepared.options.cwd),
                servers=servers,
                tools=[sdk_tool_name(spec.server, spec.tool) for spec in agent.tools],
                model_tools=[spec.name for spec in agent.tools],
                permission_mode=self.prepared.permission_mode,
                api_key_source=self._api_key_source(),
                hooks=hooks,
                resumed=self.prepared.resume is not None,
                sandbox=self.prepared.sandbox.record(),
                context_window=agent.compactor.window if agent.compactor is not None else 0,
                max_output_tokens=self.prepared.settings.max_output_tokens,
                agents=[definition.name for definition in self.prepared.definitions.agents],
                output_style=self.prepared.style[0],
                slash_commands=[command.name for command in self.prepared.definitions.commands],
                provider=provider_record(self.prepared.settings.provider),
            )
        )

    def _api_key_source(self) -> str:
        """init's apiKeySource as Claude Code names it (its binary, checked): a key helper's key wins when one runs,
        then ANTHROPIC_API_KEY; a bearer token alone or a cloud's credentials are "none" there too."""
        if self.prepared.credentials.key_helper is not None:
            return "apiKeyHelper"
        return "ANTHROPIC_API_KEY" if self.prepared.settings_env.get("ANTHROPIC_API_KEY") else "none"

    def finish(self) -> int:
        """Reports the outcome (text: answer already out, summary on stderr; json: the result object)."""
        agent, outcome = (self.runtime.agent if self.runtime is not None else None), self.outcome
        if self.renderer is not None:
            self.renderer.close()
            if outcome.code != EXIT_OK and outcome.ran_a_turn and outcome.stop_reason not in ("error", "interrupted"):
                self.renderer.say(f"stopped: {outcome.stop_reason}", "yellow")
            if agent is not None and self.text_mode:
                self.renderer.say(agent.ledger.summary(), "dim")
        if self.jsonl is not None:
            from sprout_agent.faces.headless.jsonl import ResultInfo

            self.jsonl.result(
                ResultInfo(
                    text=outcome.text,
                    stop_reason=outcome.stop_reason,
                    session_id=self.session_id,
                    # The agent counts requests as they are made: a turn cut short by a signal still made them.
                    turns=agent.requests if agent is not None else outcome.turns,
                    usage=agent.ledger.usage if agent is not None else Usage(),
                    cost_usd=agent.ledger.cost if agent is not None else 0.0,
                    duration_ms=round((time.monotonic() - self.started) * 1000),
                    exit_code=outcome.code,
                    errors=list(outcome.errors),
                    structured_output=outcome.structured,
                    api_failed=outcome.api_failed,
                    api_error_status=outcome.api_status,
                    changes=last_turn_changes(self.runtime),
                ),
                reported=outcome.reported,
            )
        if outcome.fatal is not None:
            sys.stderr.write(f"sprout-agent: {printable(outcome.fatal)}\n")
        return outcome.code


def last_turn_changes(runtime: Runtime | None) -> TurnChanges | None:
    """The checkpoint of the session's last turn, for a `result` no `TurnFinished` carried (a turn the SDK's
    interrupt, a signal or an error cut short; json's one result): None when that turn took none."""
    tracker = runtime.checkpoints if runtime is not None else None
    turns = [turn for turn in tracker.turns if turn.kind == "turn"] if tracker is not None else []
    turn = turns[-1] if turns else None  # a rewind step (the SDK's rewind_files) is not a turn of the user's
    if turn is None or not turn.before:
        return None
    return TurnChanges(turn.number, turn.files, turn.skipped)


def _stdin_chunk(size: int) -> bytes:
    """What stdin has, up to `size` bytes, as soon as it has any (read1: one read of the pipe, not a wait for all)."""
    stream = sys.stdin.buffer
    return stream.read1(size) if isinstance(stream, io.BufferedIOBase) else stream.read(size)


def _say(line: str) -> None:
    sys.stderr.write(f"sprout-agent: {line}\n")


def run_headless(prepared: Prepared) -> int:
    """Runs the prompt(s) to completion; a result is reported however the run ends."""
    headless = Headless(prepared)
    try:
        anyio.run(headless.main)
    except KeyboardInterrupt:  # before the signal watch is listening
        headless.outcome = headless.outcome.interrupted(EXIT_SIGINT)
    except Exception as error:
        headless.outcome = headless.outcome.crashed(error)
        headless.finish()
        raise
    return headless.finish()
