"""Loop events as terminal output (rich). Interactive: one console on stderr, a live region at the bottom
(board.py) and everything final printed above it once; otherwise plain progress lines on stderr and the
answer on stdout. rich itself loads at the first line printed: a `-p` run prints none before its first request.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, TextIO, assert_never

if TYPE_CHECKING:  # loaded when first needed: a -p run never renders Markdown, tables or spinners
    from rich.console import Console, RenderableType
    from rich.text import Text

    from sprout_agent.faces.terminal.live_view import LiveView

from sprout_agent.core import events as ev
from sprout_agent.core.events import Event
from sprout_agent.core.stop_reasons import FINISHED
from sprout_agent.faces.terminal.calls import short_arguments
from sprout_agent.faces.terminal.subagent_lines import outermost, shown
from sprout_agent.trust.untrusted import printable, visible

SKIPPED_NAMED = 3  # paths a checkpoint skipped, named on the changes line (the rest counted)
OBJECTION_CHARS = 600  # of a hook's objection on screen (the model gets all of it)


class TerminalRenderer:
    """Event sink for people. Interactive: live tool calls, answers as Markdown. Otherwise: plain stderr lines."""

    def __init__(
        self, *, interactive: bool, verbose: bool, stdout: TextIO | None = None, answers: TextIO | None = None
    ) -> None:
        """`stdout` takes the rendered Markdown (interactive); `answers` gets each turn's final text as is."""
        self.interactive = interactive
        self.verbose = verbose
        self._stdout = stdout
        self.answers = answers
        self._view: LiveView | None = None
        self._pending_tools: dict[str, str] = {}
        self._skipped_shown: tuple[str, ...] = ()  # what the last checkpoint skipped, as already said

    @cached_property
    def err(self) -> Console:
        """stderr's console, made (and rich imported, ~20 ms) at the first line a run prints.

        No fixed file: the consoles write to whatever sys.stderr/sys.stdout are at the time, so that while the
        prompt shows (prompt_toolkit's patch_stdout) output goes above it and the prompt is redrawn. Lines wrap at
        word boundaries (soft_wrap off): a terminal's own wrap cuts words in two. A log (stderr to a file or a
        pipe) keeps each line whole: rich would wrap it at 80 columns."""
        from rich.console import Console

        return Console(stderr=True, highlight=False, soft_wrap=not _stderr_is_terminal())

    @cached_property
    def out(self) -> Console:
        from rich.console import Console

        return Console(file=self._stdout, highlight=False)

    @property
    def view(self) -> LiveView:
        """The interactive drawing, built on first use (a -p run never loads it)."""
        if self._view is None:
            from sprout_agent.faces.terminal.live_view import LiveView

            self._view = LiveView(self.err, verbose=self.verbose)
        return self._view

    def __call__(self, event: Event) -> None:  # noqa: C901 - one arm per event type, checked exhaustive
        if isinstance(event, ev.HookEvent):  # the hook points' events: one union (core/events.py), one method
            self._on_hook(event)
            return
        match event:
            case ev.ModelWaiting():
                self._on_model_waiting(event)
            case ev.TextDelta():
                self._on_text_delta(event)
            case ev.ThinkingDelta():
                self._on_thinking_delta(event)
            case ev.AssistantText():
                self._on_assistant_text(event)
            case ev.ModelReplied():
                self._on_model_replied(event)
            case ev.AssistantMessage() | ev.StreamEvent():
                pass  # the text and the calls were shown as they came
            case ev.ApiRetry():
                self._line(_text(f"API error {event.reason}; retry {event.attempt} in {event.delay:.1f} s", "yellow"))
            case ev.ApiWaiting():
                if self.interactive or event.first:  # a script's stderr gets one line a quiet spell, not one a 15 s
                    self._line(_text(f"waiting for the API: {event.seconds} s", "dim"))
            case ev.ToolStarted() | ev.ToolRunning() | ev.ToolProgress() | ev.ToolFinished():
                self._on_tool(event)
            case ev.ServerStarted() | ev.ServerFailed() | ev.Notice():
                self._on_server_or_notice(event)
            case ev.ListChanged():
                self._line(_text(visible(event.line()), style="dim"))
            case ev.ServerLog():
                if self.verbose:
                    self._line(_text(visible(f"[{event.server} {event.level}] {event.text}"), style="dim"))
            case ev.CompactionStarted() | ev.CompactionFinished():
                self._on_compaction(event)
            case ev.TurnFinished():
                self._on_turn_finished(event)
            case ev.ServerAsked():
                self._line(_text(printable(event.line()), style="magenta"))
            case ev.SubagentStarted() | ev.SubagentEvent() | ev.SubagentFinished():
                self._on_subagent(event)
            case _:
                assert_never(event)

    def close(self) -> None:
        """The turn ended (or was cancelled): the live region goes, what was final stays."""
        if self._view is not None:
            self._view.close()

    def pause(self) -> None:
        """Before a question: the live region is erased so it cannot draw over it; the next event redraws it."""
        if self._view is not None:
            self._view.pause()

    # --- model output -----------------------------------------------------------------------------
    def _on_model_waiting(self, event: ev.ModelWaiting) -> None:
        if self.verbose:
            self._line(f"[dim]→ request {event.request_number}, ~{event.context_tokens} context tokens[/]")
        if self.interactive:
            self.view.model_waiting()

    def _on_text_delta(self, event: ev.TextDelta) -> None:
        if self.interactive:
            self.view.text_delta(event.text)

    def _on_thinking_delta(self, event: ev.ThinkingDelta) -> None:
        if self.interactive:
            self.view.thinking_delta(event.text)
        elif self.verbose:  # a -p run shows no live view; --verbose puts the reasoning on stderr as it comes
            self.err.print(_text(visible(event.text), style="dim italic"), end="")

    def _on_assistant_text(self, event: ev.AssistantText) -> None:
        if self.interactive:
            self.view.assistant_text(event.text)
        elif self.verbose:
            self.err.print(_text(visible(event.text), style="dim"))

    def _on_model_replied(self, event: ev.ModelReplied) -> None:
        if self.interactive:
            self.view.model_replied()
        if self.verbose:
            u = event.usage
            self._line(
                f"[dim]← {event.stop_reason} in {event.seconds:.2f}s: in {u.input_tokens}, "
                f"cache read {u.cache_read_tokens}, cache write {u.cache_write_tokens}, out {u.output_tokens}, "
                f"${event.cost_usd:.4f}[/]"
            )

    # --- tools ------------------------------------------------------------------------------------
    def _on_tool(self, event: ev.ToolStarted | ev.ToolRunning | ev.ToolProgress | ev.ToolFinished) -> None:
        if self.interactive:
            view = self.view
            match event:
                case ev.ToolStarted():
                    view.tool_started(event)
                case ev.ToolRunning():
                    view.tool_running(event.call_id)
                case ev.ToolProgress():
                    view.tool_progress(event)
                case ev.ToolFinished():
                    view.tool_finished(event)
        elif isinstance(event, ev.ToolStarted):
            self._pending_tools[event.call_id] = short_arguments(event.arguments)
        elif isinstance(event, ev.ToolFinished):
            arguments = self._pending_tools.pop(event.call_id, "")
            status = f"[red]error[/] {_escape(event.summary)}" if event.is_error else "[green]ok[/]"
            self._line(
                f"[cyan]⏺ {_escape(event.name)}[/] [dim]{_escape(arguments)}[/] {status} [dim]{event.seconds:.2f}s[/]"
            )

    def _on_subagent(self, event: ev.SubagentStarted | ev.SubagentEvent | ev.SubagentFinished) -> None:
        said = shown(event, self.verbose)
        if said.tail is not None and self.interactive:
            call_id = outermost(event)[0] if isinstance(event, ev.SubagentEvent) else event.call_id
            self.view.tool_progress(ev.ToolProgress(call_id, said.tail))
        if said.line is not None:
            self._line(_text(said.line, style="yellow" if said.warning else "dim"))

    # --- servers, hooks, compaction -------------------------------------------------------------------
    def _on_server_or_notice(self, event: ev.ServerStarted | ev.ServerFailed | ev.Notice) -> None:
        if isinstance(event, ev.ServerStarted):
            if self.verbose:
                self._line(
                    f"[dim]server {event.server}: {event.tool_count} tools, {event.hook_count} hooks, "
                    f"{event.seconds:.2f}s[/]"
                )
        elif isinstance(event, ev.ServerFailed):
            self._line(f"[red]server {_escape(event.server)} failed:[/] {_escape(event.reason)}")
            if event.stderr_tail:
                self._line(_text(_indent(visible(event.stderr_tail)), style="dim"))
        else:
            style = {"warning": "yellow", "error": "red"}.get(event.level, "dim")
            self._line(_text(visible(event.text), style=style))

    def _on_hook(self, event: ev.HookEvent) -> None:
        match event:
            case ev.HookCalled():
                if self.verbose:
                    self._line(f"[dim]hook {event.hook} → {', '.join(event.servers)}[/]")
            case ev.HookObjected():  # the first paragraph, wrapped at word boundaries: a person reads all of it
                first = " ".join(event.text.strip().split("\n\n", 1)[0].split())
                said = _text(f"hook {event.hook} from {visible(event.server)} objected: ", "magenta")
                self._line(said.append(visible(first[:OBJECTION_CHARS]), style=""))
            case ev.HookInjected():
                self._line(f"[magenta]hook {event.hook} from {_escape(event.server)} added context[/]")
            case ev.HookTimedOut():
                self._line(f"[yellow]hook {event.hook} on {event.server} timed out ({event.consecutive} in a row)[/]")
            case ev.HookFailed():
                if self.verbose:
                    self._line(f"[yellow]hook {event.hook} on {event.server} failed: {_escape(event.reason[:200])}[/]")
            case ev.HookServerKilled():
                self._line(f"[red]server {event.server} killed: {_escape(event.reason)}[/]")
            case ev.StopBudgetSpent() | ev.HookAnswered() | ev.HookBudgetSpent():
                self._on_hook_said(event)
            case _:
                assert_never(event)

    def _on_hook_said(self, event: ev.StopBudgetSpent | ev.HookAnswered | ev.HookBudgetSpent) -> None:
        if isinstance(event, ev.StopBudgetSpent):
            self._line(
                f"[yellow]_Stop budget spent ({event.rejections} objections this session): stopping regardless[/]"
            )
        elif isinstance(event, ev.HookAnswered):
            first = event.text.strip().split("\n", 1)[0][:120]
            self._line(f"[dim]hook {event.hook} from {_escape(event.server)} said:[/] {_escape(first)}")
        else:
            spent = f"{event.hook} budget spent ({event.objections} objections this session): calls run unchecked"
            self._line(f"[yellow]{spent}[/]")

    def _on_compaction(self, event: ev.CompactionStarted | ev.CompactionFinished) -> None:
        if isinstance(event, ev.CompactionStarted):
            self._line(f"[blue]compacting ({event.reason}) at ~{event.tokens_before} tokens…[/]")
        elif event.ok:
            self._line(f"[blue]compacted: ~{event.tokens_before} → ~{event.tokens_after} tokens[/]")
        else:
            self._line(f"[yellow]compaction failed: {_escape(event.detail)}[/]")

    def _on_turn_finished(self, event: ev.TurnFinished) -> None:
        self.close()
        if self.answers is not None:  # a script's stdout: the final answer, plain
            text = event.text if not self.answers.isatty() else visible(event.text)  # raw for a pipe
            self.answers.write(text if text.endswith("\n") or not text else text + "\n")
            self.answers.flush()
        elif self.interactive and event.stop_reason not in FINISHED:
            self.say(f"stopped: {event.stop_reason}", "yellow")
        if event.changes is not None and (line := self._changes_line(event.changes)):
            self.say(line)

    def _changes_line(self, changes: ev.TurnChanges) -> str:
        """`3 files changed: +12 −4` after a turn that changed files (the REPL, and -p's progress on stderr), with
        what the checkpoint skipped when that differs from what was last said: a big file is named once, not
        after every turn."""
        line = changes.summary if changes.files else ""
        skipped = tuple(sorted(changes.skipped))
        if skipped and skipped != self._skipped_shown:
            named = ", ".join(printable(s, 80) for s in skipped[:SKIPPED_NAMED])  # "path: reason"
            more = f" and {len(skipped) - SKIPPED_NAMED} more" if len(skipped) > SKIPPED_NAMED else ""
            line += f"{' · ' if line else ''}not checkpointed, so not rewindable: {named}{more}"
        self._skipped_shown = skipped
        return line

    # --- helpers ------------------------------------------------------------------------------------
    def _line(self, line: str | RenderableType) -> None:
        if self._view is not None:
            self._view.print(line)  # above the live region, which stays where it is
        else:
            self.err.print(line)

    # --- REPL views -------------------------------------------------------------------------------
    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        from rich.table import Table

        table = Table(title=title, title_justify="left", show_edge=False)
        for column in columns:
            table.add_column(column)
        for row in rows:  # as plain text: a cell holds a server's words, and `[/x]` in markup fails to render
            table.add_row(*(_text(visible(cell)) for cell in row))
        self._line(table)

    def show(self, renderable: RenderableType) -> None:
        """Anything rich can draw, printed like a progress line (above the live region when there is one)."""
        self._line(renderable)

    def say(self, text: str, style: str = "") -> None:
        self._line(_text(visible(text), style=style))


def _text(text: str = "", style: str = "") -> Text:
    """rich's Text, imported at the first one made (with the console that prints it)."""
    from rich.text import Text

    return Text(text, style=style)


def _escape(text: str) -> str:
    """Safe inside rich markup: no markup of its own, no terminal controls."""
    return visible(text).replace("[", "\\[")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines()[-10:])


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False
