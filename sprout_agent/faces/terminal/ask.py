"""Questions a person answers with one key (prompt_toolkit), and the `ask` mode question about a tool call:
what the call would do (an edit's diff, else its arguments), the tool's description wrapped, then y/a/n/t/Esc.

`choose` is generic (a question's choices, one key each) so every yes/no-like question reads the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout
from prompt_toolkit.layout.containers import Window
from prompt_toolkit.layout.controls import FormattedTextControl
from rich.console import Group, RenderableType
from rich.text import Text

from sprout_agent.core.claude_rules import saved_rule
from sprout_agent.core.permissions import Decision
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.faces.terminal import tool_view
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.trust import diffs
from sprout_agent.trust.untrusted import printable

QUESTION_ARGUMENT_LINES = 20
WHY_CHARS = 300
DESCRIPTION_CHARS = 100  # the description's first sentence: its purpose for a person; longer ends at a word with "…"
PREVIEWED = "dev"  # the built-in server whose edit and write are shown as the diff they would make
_KINDS: dict[str, Literal["once", "always", "deny"]] = {"once": "once", "always": "always", "deny": "deny"}


@dataclass(frozen=True, slots=True)
class Choice:
    key: str  # one key; its capital answers too
    label: str
    answer: str


async def choose(choices: Sequence[Choice], *, escape: str, escape_label: str = "no") -> str | None:
    """The answer of the first choice key pressed; Esc (and Ctrl-D) answer `escape`; None on Ctrl-C."""
    bindings = KeyBindings()

    def answer(result: str | None) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            event.app.exit(result=result)

        return handler

    for choice in choices:
        for key in {choice.key.lower(), choice.key.upper()}:
            bindings.add(key)(answer(choice.answer))
    bindings.add("escape", eager=True)(answer(escape))
    bindings.add("c-d")(answer(escape))
    bindings.add("c-c")(answer(None))  # the terminal is raw here: Ctrl-C arrives as a key, not as SIGINT
    shown = "  ".join(f"[{c.key}] {c.label}" for c in choices) + f"  (Esc: {escape_label}) › "
    control = FormattedTextControl(FormattedText([("bold", shown)]), show_cursor=True)
    app: Application[str | None] = Application(
        layout=Layout(Window(control, dont_extend_height=True, wrap_lines=True)), key_bindings=bindings
    )
    return await app.run_async(handle_sigint=False)


async def read_line(label: str, default: str = "") -> str | None:
    """One line, pre-filled with `default`; None when the person gave up (Ctrl-C, Ctrl-D)."""
    session: PromptSession[str] = PromptSession()
    try:
        return await session.prompt_async(label, default=default, handle_sigint=False)
    except (KeyboardInterrupt, EOFError):
        return None


async def ask_permission(
    renderer: TerminalRenderer,
    spec: ToolSpec,
    arguments: dict[str, object],
    cwd: str,
    *,
    outside_sandbox: str | None = None,
) -> Decision:
    """Asks whether one tool call may run: once, always (this tool, this session), or no (with a reason).

    With `outside_sandbox` (what the OS sandbox stopped in its first run): whether to run it again outside
    the sandbox; "always" then covers this exact call (same arguments) for the rest of the session."""
    renderer.pause()  # the live region would draw over the question
    renderer.show(question(spec, arguments, cwd, outside_sandbox))
    always = f"always {printable(spec.name)} this session"
    if (rule := saved_rule(spec.server, spec.tool, arguments)) is not None:
        always += f"; keep {printable(rule, WHY_CHARS)} in .claude/settings.local.json"
    if outside_sandbox is not None:
        always = "always for this exact command, this session"
    choices = [
        Choice("y", "yes", "once"),
        Choice("a", always, "always"),
        Choice("n", "no", "deny"),
        Choice("t", "no, and tell the model why", "tell"),
    ]
    picked = await choose(choices, escape="deny")
    if picked is None:
        return Decision("cancel")
    renderer.say(f"  → {next(c.label for c in choices if c.answer == picked)}", "dim")
    if picked != "tell":  # a yes to the re-run question is the answer that says "outside the sandbox"
        return Decision(_KINDS[picked], outside_sandbox=outside_sandbox is not None)
    reason = await read_line("why not? (the model reads this) › ") or ""
    return Decision("deny", reason.strip())


def question(
    spec: ToolSpec, arguments: dict[str, object], cwd: str, outside_sandbox: str | None = None
) -> RenderableType:
    """The question's text: the tool, its description (wrapped, not cut mid-word), what the call would do;
    or, for a call the sandbox stopped, what stopped it and the call."""
    if outside_sandbox is not None:
        # The reason is read from the command's own output, so it is labelled as such and kept short.
        why = printable(outside_sandbox, WHY_CHARS)
        title = f"\n{printable(spec.name)} failed in the sandbox; its output reads as: {why}"
        title += "\nRun it again OUTSIDE the sandbox?"
        return Group(Text(title, style="bold"), _arguments(arguments))
    parts: list[RenderableType] = [Text(f"\nRun {printable(spec.name)}?", style="bold")]
    if about := describe(spec.description or ""):
        parts.append(Text(about, style="dim"))
    unified = diffs.preview(spec.tool, arguments, cwd) if spec.server == PREVIEWED else None
    command = arguments.get("command")
    if unified:
        parts.append(tool_view.diff(unified))
    elif isinstance(command, str):  # the command itself, as it would run; the other arguments below it
        parts.append(Text("\n".join(f"$ {printable(line)}" for line in command.splitlines() or [""]), style="bold"))
        if rest := {k: v for k, v in arguments.items() if k != "command"}:
            parts.append(_arguments(rest))
    else:
        parts.append(_arguments(arguments))
    return Group(*parts)


def _arguments(arguments: dict[str, object]) -> Text:
    shown = json.dumps(arguments, indent=2, ensure_ascii=False).splitlines()
    if len(shown) > QUESTION_ARGUMENT_LINES:
        shown = [*shown[:QUESTION_ARGUMENT_LINES], "  …"]
    # Per line through `printable`: bidi and zero-width characters too, which could reorder what a person reads.
    return Text("\n".join(printable(line) for line in shown), style="bright_black")


def describe(description: str) -> str:
    """The description's first sentence on one line (the rest is written for the model), ending at a word
    boundary when long."""
    paragraph = " ".join(description.strip().split("\n\n", 1)[0].split())
    first = re.split(r"(?<=[.!?])\s", paragraph, maxsplit=1)[0]
    if len(first) <= DESCRIPTION_CHARS:
        return printable(first)
    return printable(first[:DESCRIPTION_CHARS].rsplit(" ", 1)[0]) + " …"
