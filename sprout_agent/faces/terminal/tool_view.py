"""How tool calls look in the terminal (rich): the live line of a running call, and what stays once it ends
(✓ or ✗ with its duration, an edit's diff, a command's last lines, the todo list as a checklist)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.text import Text

if TYPE_CHECKING:
    from rich.spinner import Spinner

from sprout_agent.core import events as ev
from sprout_agent.core.messages import text_of
from sprout_agent.faces.terminal import checklist, diff_view
from sprout_agent.faces.terminal.calls import Call, short_arguments
from sprout_agent.trust.untrusted import printable, visible

OUTPUT_PREVIEW_LINES = 4  # a finished command's last lines kept on screen (all of them with --verbose)
BASH = ("dev", "bash")
_STATUS_STYLE = {"pending": "", "in_progress": "bold", "completed": "dim strike"}
_DIFF_STYLE = {"add": "green", "del": "red", "ctx": "dim", "gap": "dim"}
_DIFF_SIGN = {"add": "+", "del": "-", "ctx": " ", "gap": " "}


def headline(mark: Text, name: str, arguments: Mapping[str, object], after: str = "") -> Text:
    line = Text.assemble(mark, " ", (printable(name), "bold cyan"))
    if shown := short_arguments(arguments):
        line.append(" " + printable(shown), "dim")
    if after:
        line.append(" " + after, "dim")
    return line


def live_call(call: Call, spinner: Spinner, now: float) -> RenderableType:
    """A running call: spinner, name, arguments, elapsed time, and a command's latest output in a dim box."""
    mark = spinner.render(now)
    mark = mark if isinstance(mark, Text) else Text("⠋", "cyan")
    elapsed = f"{now - call.running_since:.0f}s" if call.running_since is not None else "waiting"
    line = headline(mark, call.name, call.arguments, elapsed)
    if not call.tail.strip():
        return line
    box = Panel(Text(visible(call.tail.rstrip("\n")), style="dim"), border_style="dim", expand=True, padding=(0, 1))
    return Group(line, Padding(box, (0, 0, 0, 2)))


def finished(call: Call | None, event: ev.ToolFinished, verbose: bool) -> RenderableType:
    """What stays on screen once the call ended."""
    seconds = call.seconds(event.seconds) if call is not None else event.seconds
    mark = Text("✗", "bold red") if event.is_error else Text("✓", "bold green")
    arguments = call.arguments if call is not None else {}
    code = _exit_code(text_of(event.content)) if call is not None and (call.server, call.tool) == BASH else None
    after = f"{seconds:.2f}s" + (f" · exit {code}" if code not in (None, "0") else "")
    parts: list[RenderableType] = [headline(mark, event.name, arguments, after)]
    body = _body(call, event, verbose)
    if body is not None:
        parts.append(Padding(body, (0, 0, 0, 2)))
    return Group(*parts)


def cancelled(call: Call) -> RenderableType:
    """A call the turn's cancel cut short, as it stays on screen: named, with the time it had run."""
    ran = f"cancelled after {call.seconds(0.0):.1f} s" if call.running_since is not None else "cancelled"
    return headline(Text("✗", "bold yellow"), call.name, call.arguments, ran)


def _body(call: Call | None, event: ev.ToolFinished, verbose: bool) -> RenderableType | None:
    where = (call.server, call.tool) if call is not None else ("", "")
    if event.diff:
        return diff(event.diff)
    if where == checklist.TODO_WRITE and call is not None and not event.is_error:
        entries = checklist.checklist(call.arguments)
        if entries is not None:
            return todo(entries)
    text = text_of(event.content).rstrip() or event.summary
    if where == BASH and not verbose:  # the command's own lines: the notes and the exit code are the model's
        text = _command_output(text)
        if not text:
            return None
    if where == BASH or (verbose and text):
        return output(text, None if verbose else OUTPUT_PREVIEW_LINES, event.is_error)
    if event.is_error:  # the whole reason, wrapped at word boundaries (a refusal says how to proceed)
        return Text(visible(text), style="red")
    return None


_NOTE = re.compile(r"^\[[^\n]*\]$")
_EXIT = re.compile(r"^\[exit code: (-?\d+|none)\]$", re.MULTILINE)


def _command_output(text: str) -> str:
    """A command's result without the lines after its output that the tool adds for the model (what the sandbox
    stopped, `[exit code: N]`): the ✗ and the exit code on the tool's line say that to a person."""
    lines = text.splitlines()
    while lines and _NOTE.match(lines[-1].strip()):
        lines.pop()
    return "\n".join(lines).rstrip()


def _exit_code(text: str) -> str | None:
    found = _EXIT.findall(text)
    return found[-1] if found else None


def diff(unified: str, height: int = diff_view.MAX_DIFF_LINES) -> RenderableType:
    """A unified diff, coloured and numbered, at most `height` lines."""
    shown = diff_view.view(unified, height)
    width = diff_view.number_width(shown.lines)
    lines = [Text(f"+{shown.added} -{shown.removed}", style="dim")]
    for line in shown.lines:
        number = str(line.number) if line.number is not None else ""
        lines.append(
            Text.assemble(
                (f"{number:>{width}} ", "dim"),
                (f"{_DIFF_SIGN[line.kind]} {visible(line.text)}", _DIFF_STYLE[line.kind]),
            )
        )
    if shown.hidden:
        lines.append(Text(f"… {shown.hidden} more lines", style="dim"))
    return Group(*lines)


def todo(entries: list[checklist.Entry]) -> RenderableType:
    if not entries:
        return Text("(todo list cleared)", style="dim")
    return Group(*(Text(f"{e.mark} {visible(e.content)}", style=_STATUS_STYLE[e.status]) for e in entries))


def output(text: str, limit: int | None, is_error: bool) -> RenderableType:
    """A command's output: the last `limit` lines (all when None), saying how many came before."""
    lines = visible(text).splitlines()
    style = "red" if is_error else "dim"
    if limit is None or len(lines) <= limit:
        return Text("\n".join(lines), style=style)
    hidden = len(lines) - limit
    return Group(Text(f"… {hidden} earlier lines (--verbose shows all)", style="dim"), *_styled(lines[-limit:], style))


def _styled(lines: list[str], style: str) -> list[Text]:
    return [Text(line, style=style) for line in lines]
