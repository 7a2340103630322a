"""Renders the loop's events as ACP `session/update` notifications for one session: text chunks, tool
calls (pending → in_progress → completed | failed), the plan, usage, and hooks shown as `think` calls."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from sprout_agent.core.events import (
    ApiRetry,
    ApiWaiting,
    AssistantMessage,
    AssistantText,
    CompactionFinished,
    CompactionStarted,
    Event,
    HookAnswered,
    HookBudgetSpent,
    HookCalled,
    HookEvent,
    HookFailed,
    HookInjected,
    HookObjected,
    HookServerKilled,
    HookTimedOut,
    ListChanged,
    ModelReplied,
    ModelWaiting,
    Notice,
    ServerAsked,
    ServerFailed,
    ServerLog,
    ServerStarted,
    StopBudgetSpent,
    StreamEvent,
    SubagentEvent,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolProgress,
    ToolRunning,
    ToolStarted,
    TurnFinished,
)
from sprout_agent.core.hooks.contract import HOOK_CALL_ID_PREFIX
from sprout_agent.core.messages import Image, Text
from sprout_agent.faces.acp import toolview
from sprout_agent.faces.acp.wire import Json
from sprout_agent.trust import diffs

MAX_CONTENT_CHARS = 64 * 1024  # of a tool's output shown in the editor (the model's copy is not cut here)


@dataclass
class _Call:
    call_id: str
    event: ToolStarted
    terminal: str | None = None  # the editor's terminal the call runs in (editor_terminal.py)


PARENT_META = "sprout-agent/parentToolCallId"  # a subagent's call names the `task` call it runs under


class Updates:
    """One session's renderer: `emit` is the loop's sink; updates flow only between `begin` and `end`."""

    def __init__(self, session_id: str, notify: Callable[[Json], None], cwd: str) -> None:
        self.session_id = session_id
        self._notify = notify
        self._cwd = cwd
        self._open: dict[str, _Call] = {}
        self._in_turn = False
        self._held: list[str] = []
        self._ids = itertools.count(1)
        self._compaction: str | None = None
        # (context window, dollars spent so far), once the agent exists.
        self.usage_source: Callable[[], tuple[int, float]] | None = None

    def send(self, update: Json) -> None:
        self._notify({"sessionId": self.session_id, "update": update})

    def emit(self, event: Event) -> None:
        if not self._in_turn:  # between turns: keep what the user must see for the next turn, drop the rest
            if isinstance(event, Notice | ServerFailed):
                self._held.append(_notice_text(event))
            return
        self._render(event)

    def _render(self, event: Event) -> None:  # noqa: C901 - one arm per event type, checked exhaustive
        if isinstance(event, HookEvent):  # the hook points' events: one union (core/events.py), one method
            self._hook(event)
            return
        match event:
            case TextDelta():
                self.message(event.text)
            case ThinkingDelta():  # the model's reasoning, as ACP's own kind of chunk
                self.send({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": event.text}})
            case ToolStarted():
                self._tool_started(event)
            case ToolRunning():
                self._tool_running(event)
            case ToolProgress():
                self._tool_progress(event)
            case ToolFinished():
                self._tool_finished(event)
            case ModelReplied():
                self._usage(event)
            case CompactionStarted():
                self._compaction_started(event)
            case CompactionFinished():
                self._compaction_finished(event)
            case Notice() | ServerFailed() | ApiRetry():
                self._notice(event)
            case ApiWaiting():
                self._thought(f"waiting for the API: {event.seconds} s")
            case ServerAsked() | ListChanged():
                self._thought(event.line())
            case ModelWaiting() | AssistantText() | ServerStarted() | TurnFinished() | ServerLog():
                pass  # text went out as chunks; the prompt's response carries the stop reason
            case AssistantMessage() | StreamEvent():
                pass  # the same reply again, whole or raw: ACP had it as chunks
            case SubagentEvent():
                self._subagent(event.call_id, event.event)
            case SubagentStarted():
                self._tool_progress(ToolProgress(event.call_id, f"{event.agent} started: {event.description}"))
            case SubagentFinished():
                pass  # the parent call's result follows at once, with the subagent's answer
            case _:
                assert_never(event)

    def _subagent(self, parent: str, event: Event) -> None:
        """A subagent's tool calls as calls of their own, each naming the parent's call in `_meta` (editors that
        nest show them under it); the rest of its loop stays out of the editor's thread."""
        match event:
            case SubagentEvent():
                self._subagent(event.call_id, event.event)
            case ToolStarted():
                self._tool_started(event, parent)
            case ToolRunning() | ToolProgress() | ToolFinished():
                self._render(event)
            case _:
                pass

    def begin(self) -> None:
        self._in_turn = True
        held, self._held = self._held, []
        for text in held:
            self._thought(text)

    def end(self) -> None:
        """Closes the turn: calls still open were cancelled, and nothing more is sent for it."""
        for call in self._open.values():
            self.send(_progress(call.call_id, "failed", [_text_content("cancelled")]))
        self._open.clear()
        if self._compaction is not None:
            self.send(_progress(self._compaction, "failed", [_text_content("cancelled")]))
            self._compaction = None
        self._in_turn = False

    def message(self, text: str) -> None:
        self.send({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})

    # --- the seams the session wires in: permission and the tool host ------------------------------------

    def open_call(self, call_id: str) -> _Call | None:
        """The call the loop announced with this id and has not finished yet."""
        return self._open.get(call_id)

    def tool_call_fields(self, call: _Call) -> Json:
        """What a tool call shows: also sent with a permission request, so the editor renders it alike."""
        event = call.event
        view = toolview.describe(event.server, event.tool, event.arguments, self._cwd)
        fields: Json = {"toolCallId": call.call_id, "title": view.title, "kind": view.kind}
        fields["rawInput"] = event.arguments
        if view.locations:
            fields["locations"] = view.locations
        diff = toolview.diff_content(event.server, event.tool, event.arguments, self._cwd)
        if diff:
            fields["content"] = diff
        return fields

    def show_terminal(self, arguments: dict[str, object], terminal: str) -> None:
        """The editor's terminal joins the call's content (and stays in it: the editor shows it live, then as it
        ended). The call is the open one the loop passed this very arguments object to."""
        call = next((c for c in self._open.values() if c.event.arguments is arguments), None)
        if call is not None:
            call.terminal = terminal
            self.send(_progress(call.call_id, "in_progress", [_terminal(terminal)]))

    # --- event handlers ------------------------------------------------------------------------------------

    def _tool_started(self, event: ToolStarted, parent: str | None = None) -> None:
        call = _Call(event.call_id, event)
        self._open[call.call_id] = call
        nested: Json = {"_meta": {PARENT_META: parent}} if parent is not None else {}
        self.send({"sessionUpdate": "tool_call", **self.tool_call_fields(call), "status": "pending", **nested})

    def _tool_running(self, event: ToolRunning) -> None:
        if event.call_id in self._open:
            self.send(_progress(event.call_id, "in_progress"))

    def _tool_progress(self, event: ToolProgress) -> None:
        # The running output replaces the call's content; the server already sends at most ten a second.
        if event.call_id in self._open:
            self.send(_progress(event.call_id, "in_progress", [_text_content(event.tail)]))

    def _tool_finished(self, event: ToolFinished) -> None:
        call = self._open.pop(event.call_id, None)
        if call is None:
            return
        started = call.event
        content = _outcome_content(event.content) if event.content else [_text_content(event.summary)]
        if event.diff and not event.is_error:
            content = self._diff_content(started, event.diff) or content
        elif not event.is_error:
            content = toolview.diff_content(started.server, started.tool, started.arguments, self._cwd) or content
        if call.terminal is not None:
            content = [_terminal(call.terminal), *content]
        self.send(_progress(call.call_id, "failed" if event.is_error else "completed", content))
        entries = toolview.plan_entries(started.server, started.tool, started.arguments)
        if entries is not None and not event.is_error:
            self.send({"sessionUpdate": "plan", "entries": entries})

    def _diff_content(self, started: ToolStarted, diff: str) -> list[Json]:
        """The change the tool reported, hunk by hunk with its context (an edit's whole-file text is not
        known here): what the editor shows as the call's diff."""
        path = started.arguments.get("file_path")
        if not isinstance(path, str) or not path:
            return []
        where = toolview.absolute(path, self._cwd)
        return [{"type": "diff", "path": where, "oldText": old, "newText": new} for old, new in diffs.sides(diff)]

    def turn_changes(self, turn: int, title: str, patches: list[tuple[str, str]]) -> None:
        """What a turn changed on disk, from its checkpoints: one completed edit, a diff per text file."""
        content: list[Json] = [
            {"type": "diff", "path": path, "oldText": old, "newText": new}
            for path, patch in patches
            for old, new in diffs.sides(patch)
        ]
        update: Json = {"sessionUpdate": "tool_call", "toolCallId": f"turn-{turn}-changes", "title": title}
        locations: list[Json] = [{"path": path} for path, _ in patches]
        self.send(update | {"kind": "edit", "status": "completed", "content": content, "locations": locations})

    def _usage(self, event: ModelReplied) -> None:
        if self.usage_source is None:
            return
        size, cost = self.usage_source()
        used = event.usage.context_tokens + event.usage.output_tokens
        update: Json = {"sessionUpdate": "usage_update", "used": used, "size": max(size, used)}
        update["cost"] = {"amount": round(cost, 6), "currency": "USD"}
        self.send(update)

    def _hook(self, event: HookEvent) -> None:
        match event:
            case HookObjected():
                self._hook_objected(event)
            case HookInjected():
                self._hook_injected(event)
            case HookAnswered():
                self._think(f"Hook {event.hook} ({event.server}) said", event.text, "completed")
            case HookTimedOut() | HookFailed() | HookServerKilled() | StopBudgetSpent() | HookBudgetSpent():
                self._hook_trouble(event)
            case HookCalled():
                pass  # the calls that said something are shown by what they said
            case _:
                assert_never(event)

    def _hook_objected(self, event: HookObjected) -> None:
        then = "the call did not run" if event.hook == "_PreToolUse" else "the agent goes on"
        self._think(f"Hook {event.hook} ({event.server}) objected: {then}", event.text, "completed")

    def _hook_injected(self, event: HookInjected) -> None:
        what = "restored context" if event.hook == "_PostCompact" else "added context"
        self._think(f"Hook {event.hook} ({event.server}) {what}", event.text, "completed")

    def _hook_trouble(
        self, event: HookTimedOut | HookFailed | HookServerKilled | StopBudgetSpent | HookBudgetSpent
    ) -> None:
        if isinstance(event, HookTimedOut):
            title, text = f"Hook {event.hook} ({event.server}) timed out", f"{event.consecutive} in a row"
        elif isinstance(event, HookFailed):
            title, text = f"Hook {event.hook} ({event.server}) failed", event.reason
        elif isinstance(event, HookServerKilled):
            title, text = f"Hook server {event.server} was stopped", event.reason
        elif isinstance(event, HookBudgetSpent):
            title, text = f"Hook {event.hook} budget spent", f"{event.objections} objections: calls run unchecked"
        else:
            title, text = "Hook _Stop budget spent", f"{event.rejections} objections: the agent may stop now"
        self._think(title, text, "failed")

    def _compaction_started(self, event: CompactionStarted) -> None:
        self._compaction = f"sprout_compaction_{next(self._ids)}"
        title = f"Compacting the conversation ({event.reason}, ~{event.tokens_before} tokens)"
        self.send({"sessionUpdate": "tool_call", "toolCallId": self._compaction, "title": title, "kind": "think",
                   "status": "in_progress"})  # fmt: skip

    def _compaction_finished(self, event: CompactionFinished) -> None:
        if self._compaction is None:
            return
        text = f"~{event.tokens_before} → ~{event.tokens_after} tokens" + (f": {event.detail}" if event.detail else "")
        self.send(_progress(self._compaction, "completed" if event.ok else "failed", [_text_content(text)]))
        self._compaction = None

    def _notice(self, event: Notice | ServerFailed | ApiRetry) -> None:
        if isinstance(event, ApiRetry):
            self._thought(f"API busy ({event.reason}): retry {event.attempt} in {event.delay:.1f} s")
        else:
            self._thought(_notice_text(event))

    def _think(self, title: str, text: str, status: str) -> None:
        call_id = f"{HOOK_CALL_ID_PREFIX}{next(self._ids)}"
        self.send({"sessionUpdate": "tool_call", "toolCallId": call_id, "title": title, "kind": "think",
                   "status": status, "content": [_text_content(text)]})  # fmt: skip

    def _thought(self, text: str) -> None:
        self.send({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text + "\n"}})


def _notice_text(event: Notice | ServerFailed) -> str:
    if isinstance(event, ServerFailed):
        return f"warning: MCP server '{event.server}' failed to start: {event.reason}"
    return event.text if event.level == "info" else f"{event.level}: {event.text}"


def _progress(call_id: str, status: str, content: list[Json] | None = None) -> Json:
    update: Json = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}
    if content is not None:
        update["content"] = content
    return update


def _terminal(terminal: str) -> Json:
    return {"type": "terminal", "terminalId": terminal}


def _text_content(text: str) -> Json:
    if len(text) > MAX_CONTENT_CHARS:
        text = text[:MAX_CONTENT_CHARS] + f"\n… [{len(text) - MAX_CONTENT_CHARS} characters not shown]"
    return {"type": "content", "content": {"type": "text", "text": text}}


def _outcome_content(blocks: tuple[Text | Image, ...]) -> list[Json]:
    content: list[Json] = []
    for block in blocks:
        match block:
            case Text():
                content.append(_text_content(block.text))
            case Image():
                image: Json = {"type": "image", "data": block.data, "mimeType": block.media_type}
                content.append({"type": "content", "content": image})
            case _:
                assert_never(block)
    return content
