"""`--output-format json|stream-json` and `--input-format stream-json`: the contract for scripts.

One JSON object per line on stdout in Claude Code's shapes (stream_lines.py builds them), described in
docs/stream-json.md and docs/stream-json.schema.json. Stdlib only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TextIO, assert_never

from sprout_agent.core import events as ev
from sprout_agent.core.errors import EXIT_USAGE, exit_code_for_stop
from sprout_agent.core.events import Event
from sprout_agent.core.messages import Block, Image, RedactedThinking, Text, Thinking, Usage
from sprout_agent.core.tool_names import sdk_tool_name
from sprout_agent.faces.headless.stream_lines import (
    SCHEMA_VERSION,
    InitInfo,
    Record,
    ResultInfo,
    ServerInfo,
    add_model_usage,
    assistant_record,
    hook_record,
    init_record,
    ms,
    new_uuid,
    replayed_user_record,
    result_record,
    subagent_finished_record,
    system_record,
    tool_result_record,
    write_record,
)

__all__ = ["SCHEMA_VERSION", "InitInfo", "JsonlSink", "ResultInfo", "ServerInfo"]

API_SERVER = "anthropic"  # the `server` of the API's own tools (web search and fetch): no MCP name
INTERRUPTED = "interrupted: the run ended before this tool call finished"


def report_early_error(output_format: str, message: str, exit_code: int, out: TextIO) -> None:
    """A usage or config error before any session started: json and stream-json still get a `result`."""
    if output_format in ("json", "stream-json"):
        write_record(out, result_record(ResultInfo("", "error", None, 0, Usage(), 0.0, 0, exit_code, [message])))


@dataclass(frozen=True, slots=True)
class _Call:
    """A tool call between its start and its end."""

    name: str  # SDK-facing
    server: str
    started: float
    arguments: Mapping[str, object]


# Events whose content init already carries (server start-up).
_FOLDED_INTO_INIT = (ev.ServerStarted, ev.ServerFailed)


class JsonlSink:
    """Event sink for scripts. stream-json: `system/init`, the lines of each event, a `result` per user turn.
    json: only the final `result`.

    Events that arrive before `init` (servers starting, config notices) wait and follow it, so a
    reader can rely on `init` being the first line whenever a session started.
    """

    def __init__(self, out: TextIO, *, stream: bool, progress: bool = False) -> None:
        self.out = out
        self.stream = stream
        self.progress = progress  # `tool_progress` lines (--verbose): a live view wants them, a script does not
        self.forward_subagent_text = False  # --forward-subagent-text: a subagent's text too, not only its calls
        self.session_id: str | None = None
        self._initialised = False
        self._pending: list[Event] = []
        self._open_calls: dict[str, _Call] = {}  # until finished
        self._denials: list[Record] = []  # the permission policy's refusals in this user turn
        self._model_usage: dict[str, Record] = {}  # per model, the session's running totals
        self._limits = (0, 0)  # the context window and max output tokens, from init
        self._finished = False
        self._api_seconds = 0.0  # model requests' time, this run
        self._turn_api_seconds = 0.0  # … this user turn

    def __call__(self, event: Event) -> None:
        if isinstance(event, ev.ModelReplied):
            self._api_seconds += event.seconds
            self._turn_api_seconds += event.seconds
        elif isinstance(event, ev.AssistantMessage):
            add_model_usage(self._model_usage, event, *self._limits)
        if not self.stream:
            if isinstance(event, ev.ToolStarted | ev.ToolFinished):
                self._track(event)  # for the result's permission_denials
            return
        if self._finished:
            return
        if not self._initialised:
            if not isinstance(event, _FOLDED_INTO_INIT):
                self._pending.append(event)
            return
        for record in self._records(event):
            self._write(record)

    def replay(self, text: str, images: Sequence[Image], line_uuid: str) -> None:
        """`--replay-user-messages`: the user message echoed with the uuid that names its turn (stream-json)."""
        if self.stream and self._initialised and not self._finished:
            write_record(
                self.out, {**replayed_user_record(text, images), "session_id": self.session_id, "uuid": line_uuid}
            )

    def init(self, info: InitInfo) -> None:
        self.session_id = info.session_id
        self._limits = (info.context_window, info.max_output_tokens)
        if not self.stream or self._initialised:
            return
        self._initialised = True
        self._write(init_record(info))
        pending, self._pending = self._pending, []
        for event in pending:
            self(event)

    def result(self, info: ResultInfo, *, reported: bool = False) -> None:
        """The run's outcome, written once. `reported`: the last user turn's `result` already said it (stream-json
        writes no second one). A stream that never reached `init` gets only this line."""
        if self._finished:
            return
        self._close_open_calls()
        self._finished = True
        if not (reported and self.stream):
            totals = {"duration_api_ms": ms(self._api_seconds), "model_usage": self._model_usage}
            final = replace(info, **totals, permission_denials=self._denials)
            write_record(self.out, result_record(final))

    def skipped(self, reason: str, cost_usd: float) -> None:
        """A stdin message that was not run (over the size cap): an error `result` of its own (stream-json), so an
        SDK waiting for its message's result goes on. The run goes on too: it is not the run's outcome."""
        if not self.stream or self._finished:
            return
        info = ResultInfo("", "error", self.session_id, 0, Usage(), cost_usd, 0, EXIT_USAGE, [reason])
        write_record(self.out, result_record(replace(info, model_usage=dict(self._model_usage))))

    def _close_open_calls(self) -> None:
        """A call cut short (a signal, an error, the SDK's interrupt) never finished on its own: every tool_use
        gets its result (in stream-json; json reports only the result)."""
        for call_id, call in list(self._open_calls.items()) if self.stream else []:
            if call.server != API_SERVER:
                self._write(tool_result_record(call_id, (Text(INTERRUPTED),), True))
            self._write(_tool_finished(call_id, call.name, call.server, True, time.monotonic() - call.started))
        self._open_calls.clear()

    def _write(self, record: Record) -> None:
        write_record(self.out, {**record, "session_id": self.session_id, "uuid": new_uuid()})

    def _turn_result(self, event: ev.TurnFinished) -> Record:
        api, self._turn_api_seconds = self._turn_api_seconds, 0.0
        denials, self._denials = self._denials, []
        code = exit_code_for_stop(event.stop_reason)
        info = ResultInfo(
            event.text, event.stop_reason, self.session_id, event.turns, event.usage, event.cost_usd,
            ms(event.seconds), code, [event.error] if event.error else [], ms(api), denials, dict(self._model_usage),
            event.structured_output, changes=event.changes,
        )  # fmt: skip
        return result_record(info)

    def _track(self, event: ev.ToolStarted | ev.ToolFinished) -> _Call:
        """A call from its start to its end (the SDK-facing name, the server); a refused one is a denial."""
        if isinstance(event, ev.ToolStarted):
            name = sdk_tool_name(event.server, event.tool) if event.server not in ("", API_SERVER) else event.name
            self._open_calls[event.call_id] = call = _Call(name, event.server, time.monotonic(), event.arguments)
            return call
        call = self._open_calls.pop(event.call_id, _Call(event.name, "", 0.0, {}))
        if event.denied:  # the input refused: a callback's rewrite, when it was that one
            refused = event.denied_input if event.denied_input is not None else call.arguments
            self._denials.append({"tool_name": call.name, "tool_use_id": event.call_id, "tool_input": refused})
        return call

    def _track_input(self, call_id: str, arguments: dict[str, object]) -> None:
        """A hook or the permission callback changed the call's input: it runs (and is reported) as changed."""
        if (call := self._open_calls.get(call_id)) is not None:
            self._open_calls[call_id] = replace(call, arguments=arguments)

    def _records(self, event: Event) -> list[Record]:
        match event:
            case ev.ToolStarted():
                name = self._track(event).name
                fields = {"id": event.call_id, "name": name, "server": event.server, "tool": event.tool}
                return [system_record("tool_started", **fields, arguments=event.arguments)]
            case ev.ToolFinished():
                call = self._track(event)
                name, server = call.name, call.server
                finished = _tool_finished(event.call_id, name, server, event.is_error, event.seconds)
                if event.diff:
                    finished["diff"] = event.diff
                if server == API_SERVER:  # a web search's result is in the `assistant` line, as the API sent it
                    return [finished]
                return [tool_result_record(event.call_id, event.content, event.is_error), finished]
            case ev.ToolRunning() if event.arguments is not None:
                self._track_input(event.call_id, event.arguments)
                return [system_record("tool_input_updated", id=event.call_id, arguments=event.arguments)]
            case ev.TurnFinished():
                if event.stop_reason == "interrupted":
                    self._close_open_calls()
                return [self._turn_result(event)]
            case ev.SubagentEvent():
                return self._subagent_records(event.call_id, event.event)
            case _:
                record = self._record(event)
                return [record] if record is not None else []

    def _record(self, event: Event) -> Record | None:  # noqa: C901 - one arm per event type, checked exhaustive
        if isinstance(event, ev.HookEvent):  # the hook points' events: one union (core/events.py), one function
            return hook_record(event)
        match event:
            case (
                ev.ModelWaiting()
                | ev.TextDelta()
                | ev.ToolRunning()
                | ev.ThinkingDelta()
                | ev.AssistantText()
                | ev.ModelReplied()
                | ev.ToolStarted()
                | ev.ToolFinished()
                | ev.TurnFinished()
            ):
                return None  # `assistant` carries the reply whole; the last three are _records'
            case ev.AssistantMessage():
                return assistant_record(event)
            case ev.StreamEvent():
                return {"type": "stream_event", "event": dict(event.event), "parent_tool_use_id": None}
            case ev.Notice():
                return system_record("notice", level=event.level, text=event.text)
            case ev.ServerStarted():
                fields = {"tools": event.tool_count, "hooks": event.hook_count, "duration_ms": ms(event.seconds)}
                return system_record("server_started", server=event.server, **fields)
            case ev.ServerFailed():
                return system_record(
                    "server_failed", server=event.server, reason=event.reason, stderr_tail=event.stderr_tail
                )
            case ev.ListChanged():
                fields = {"count": event.count, "added": list(event.added), "removed": list(event.removed)}
                return system_record("list_changed", server=event.server, kind=event.kind, **fields)
            case ev.ServerLog():
                return system_record("server_log", server=event.server, level=event.level, text=event.text)
            case ev.ApiWaiting():
                return system_record("api_waiting", seconds=event.seconds)
            case ev.ApiRetry():
                delay = ms(event.delay)
                return system_record(
                    "api_retry", attempt=event.attempt, reason=event.reason, delay_ms=delay, retry_delay_ms=delay
                )
            case ev.ToolProgress():
                return system_record("tool_progress", id=event.call_id, tail=event.tail) if self.progress else None
            case ev.CompactionStarted():
                return system_record("compaction_started", reason=event.reason, tokens_before=event.tokens_before)
            case ev.CompactionFinished():
                tokens = {"tokens_before": event.tokens_before, "tokens_after": event.tokens_after}
                return system_record("compaction_finished", ok=event.ok, **tokens, detail=event.detail)
            case ev.ServerAsked():
                said = {"message": event.message, "outcome": event.outcome, "detail": event.detail}
                return system_record("server_request", server=event.server, kind=event.kind, **said)
            case ev.SubagentStarted():
                fields = {"agent": event.agent, "description": event.description, "model": event.model}
                return system_record("subagent_started", id=event.call_id, **fields, depth=event.depth)
            case ev.SubagentFinished():
                return subagent_finished_record(event)
            case ev.SubagentEvent():
                return None  # _records
            case _:
                assert_never(event)

    def _subagent_records(self, parent: str, event: Event) -> list[Record]:
        """A subagent's lines as Claude Code writes them: its replies' tool calls and its tool results, each with
        `parent_tool_use_id` (the parent's `task` call); its text stays out unless `--forward-subagent-text`. A
        grandchild's lines name their own parent call."""
        match event:
            case ev.SubagentEvent() | ev.SubagentStarted() | ev.SubagentFinished():
                return self._records(event)
            case ev.AssistantMessage():
                shown = event if self.forward_subagent_text else replace(event, content=_calls_only(event.content))
                return [assistant_record(shown, parent_tool_use_id=parent)] if shown.content else []
            case ev.ToolFinished():
                return [tool_result_record(event.call_id, event.content, event.is_error, parent_tool_use_id=parent)]
            case ev.Notice() | ev.HookObjected() | ev.HookInjected() | ev.HookTimedOut() | ev.HookServerKilled():
                record = self._record(event)
                return [{**record, "parent_tool_use_id": parent}] if record is not None else []
            case _:
                return []


def _calls_only(content: tuple[Block, ...]) -> tuple[Block, ...]:
    return tuple(block for block in content if not isinstance(block, Text | Thinking | RedactedThinking))


def _tool_finished(call_id: str, name: str, server: str, is_error: bool, seconds: float) -> Record:
    return system_record(
        "tool_finished", id=call_id, name=name, server=server, is_error=is_error, duration_ms=ms(seconds)
    )
