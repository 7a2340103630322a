"""The only importer of rich: loop events as terminal output (progress on stderr, answers on stdout)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO, assert_never

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:  # loaded when first needed: a -p run never renders Markdown, tables or spinners
    from rich.live import Live
    from rich.spinner import Spinner

from sprout_agent import events as ev
from sprout_agent.events import Event
from sprout_agent.untrusted import visible

ARGUMENT_PREVIEW_CHARS = 60


def short_arguments(arguments: dict[str, object]) -> str:
    """`key=value` pairs cut to one short line, for the compact tool line."""
    parts: list[str] = []
    for key, value in arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={' '.join(shown.split())}")
    line = " ".join(parts)
    return line if len(line) <= ARGUMENT_PREVIEW_CHARS else line[: ARGUMENT_PREVIEW_CHARS - 1] + "…"


class TerminalRenderer:
    """Event sink for people. Interactive: spinner, streamed text, Markdown. Otherwise: plain stderr lines."""

    def __init__(
        self, *, interactive: bool, verbose: bool, stdout: TextIO | None = None, answers: TextIO | None = None
    ) -> None:
        """`stdout` takes the rendered Markdown (interactive); `answers` gets each turn's final text as is."""
        self.interactive = interactive
        self.verbose = verbose
        # No fixed file: the consoles write to whatever sys.stderr/sys.stdout are at the time, so that while the
        # prompt shows (prompt_toolkit's patch_stdout) output goes above it and the prompt is redrawn.
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self.out = Console(file=stdout, highlight=False)
        self.answers = answers
        self._live: Live | None = None
        self._streamed = ""
        self._pending_tools: dict[str, str] = {}

    def __call__(self, event: Event) -> None:  # noqa: C901 - one arm per event type, checked exhaustive
        match event:
            case ev.ModelWaiting():
                self._on_model_waiting(event)
            case ev.TextDelta():
                self._on_text_delta(event)
            case ev.AssistantText():
                self._on_assistant_text(event)
            case ev.ModelReplied():
                self._on_model_replied(event)
            case ev.ApiRetry():
                self._line(f"[yellow]API error ({event.reason}); retry {event.attempt} in {event.delay:.1f}s[/]")
            case ev.ToolStarted():
                self._pending_tools[event.call_id] = short_arguments(event.arguments)
            case ev.ToolRunning():
                pass  # the line is written when the call finishes
            case ev.ToolFinished():
                self._on_tool_finished(event)
            case ev.ServerStarted() | ev.ServerFailed() | ev.Notice():
                self._on_server_or_notice(event)
            case (
                ev.HookCalled()
                | ev.HookObjected()
                | ev.HookInjected()
                | ev.HookTimedOut()
                | ev.HookFailed()
                | ev.HookServerKilled()
                | ev.StopBudgetSpent()
            ):
                self._on_hook(event)
            case ev.CompactionStarted() | ev.CompactionFinished():
                self._on_compaction(event)
            case ev.TurnFinished():
                self._on_turn_finished(event)
            case _:
                assert_never(event)

    def close(self) -> None:
        self._stop_live()

    # --- model output -----------------------------------------------------------------------------
    def _on_model_waiting(self, event: ev.ModelWaiting) -> None:
        if self.verbose:
            self.err.print(f"[dim]→ request {event.request_number}, ~{event.context_tokens} context tokens[/]")
        if self.interactive:
            self._streamed = ""
            from rich.spinner import Spinner

            self._start_live(Spinner("dots", text=Text("thinking…", style="dim")))

    def _on_text_delta(self, event: ev.TextDelta) -> None:
        if self.interactive:
            self._streamed += event.text
            self._start_live(Text(visible(self._streamed)))

    def _on_assistant_text(self, event: ev.AssistantText) -> None:
        if self.interactive:
            self._stop_live()
            from rich.markdown import Markdown

            self.out.print(Markdown(visible(event.text)))
        elif self.verbose:
            self.err.print(Text(visible(event.text), style="dim"))

    def _on_model_replied(self, event: ev.ModelReplied) -> None:
        self._stop_live()
        if self.verbose:
            u = event.usage
            self.err.print(
                f"[dim]← {event.stop_reason} in {event.seconds:.2f}s: in {u.input_tokens}, "
                f"cache read {u.cache_read_tokens}, cache write {u.cache_write_tokens}, out {u.output_tokens}, "
                f"${event.cost_usd:.4f}[/]"
            )

    # --- tools ------------------------------------------------------------------------------------
    def _on_tool_finished(self, event: ev.ToolFinished) -> None:
        arguments = self._pending_tools.pop(event.call_id, "")
        status = f"[red]error[/] {_escape(event.summary)}" if event.is_error else "[green]ok[/]"
        self._line(
            f"[cyan]⏺ {_escape(event.name)}[/] [dim]{_escape(arguments)}[/] {status} [dim]{event.seconds:.2f}s[/]"
        )

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
                self._line(Text(_indent(visible(event.stderr_tail)), style="dim"))
        else:
            style = {"warning": "yellow", "error": "red"}.get(event.level, "dim")
            self._line(Text(visible(event.text), style=style))

    def _on_hook(self, event: ev.HookEvent) -> None:
        match event:
            case ev.HookCalled():
                if self.verbose:
                    self._line(f"[dim]hook {event.hook} → {', '.join(event.servers)}[/]")
            case ev.HookObjected():
                first = event.text.strip().split("\n", 1)[0][:120]
                self._line(f"[magenta]hook {event.hook} from {_escape(event.server)} objected:[/] {_escape(first)}")
            case ev.HookInjected():
                self._line(f"[magenta]hook {event.hook} from {_escape(event.server)} added context[/]")
            case ev.HookTimedOut():
                self._line(f"[yellow]hook {event.hook} on {event.server} timed out ({event.consecutive} in a row)[/]")
            case ev.HookFailed():
                if self.verbose:
                    self._line(f"[yellow]hook {event.hook} on {event.server} failed: {_escape(event.reason[:200])}[/]")
            case ev.HookServerKilled():
                self._line(f"[red]server {event.server} killed: {_escape(event.reason)}[/]")
            case ev.StopBudgetSpent():
                self._line(
                    f"[yellow]_Stop budget spent ({event.rejections} objections this session): stopping regardless[/]"
                )
            case _:
                assert_never(event)

    def _on_compaction(self, event: ev.CompactionStarted | ev.CompactionFinished) -> None:
        if isinstance(event, ev.CompactionStarted):
            self._line(f"[blue]compacting ({event.reason}) at ~{event.tokens_before} tokens…[/]")
        elif event.ok:
            self._line(f"[blue]compacted: ~{event.tokens_before} → ~{event.tokens_after} tokens[/]")
        else:
            self._line(f"[yellow]compaction failed: {_escape(event.detail)}[/]")

    def _on_turn_finished(self, event: ev.TurnFinished) -> None:
        self._stop_live()
        if self.answers is not None:  # a script's stdout: the final answer, plain
            text = event.text if not self.answers.isatty() else visible(event.text)  # raw for a pipe
            self.answers.write(text if text.endswith("\n") or not text else text + "\n")
            self.answers.flush()
        elif self.interactive and event.stop_reason not in ("end_turn", "stop_sequence"):
            self.say(f"stopped: {event.stop_reason}", "yellow")

    # --- helpers ------------------------------------------------------------------------------------
    def _line(self, line: str | Text) -> None:
        self._stop_live()
        self.err.print(line)

    def _start_live(self, renderable: Spinner | Text) -> None:
        if self._live is None:
            from rich.live import Live

            self._live = Live(renderable, console=self.err, transient=True, refresh_per_second=12)
            self._live.start()
        else:
            self._live.update(renderable)

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    # --- REPL views -------------------------------------------------------------------------------
    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        from rich.table import Table

        table = Table(title=title, title_justify="left", show_edge=False)
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        self.err.print(table)

    def say(self, text: str, style: str = "") -> None:
        self._line(Text(visible(text), style=style))


def _escape(text: str) -> str:
    """Safe inside rich markup: no markup of its own, no terminal controls."""
    return visible(text).replace("[", "\\[")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines()[-10:])
