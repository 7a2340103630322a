"""REPL input: a prompt with line editing and persistent history, and the permission question (prompt_toolkit)."""

from __future__ import annotations

import json
from pathlib import Path

from prompt_toolkit import PromptSession, print_formatted_text
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory

from sprout_agent.permissions import Decision
from sprout_agent.protocols import ToolSpec
from sprout_agent.untrusted import printable

QUESTION_ARGUMENT_LINES = 20


class PromptReader:
    def __init__(self, history_file: Path | None) -> None:
        history = InMemoryHistory()
        if history_file is not None:
            try:
                history_file.parent.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(history_file))
            except OSError:
                pass  # an unwritable data dir costs history, not the session
        self._session: PromptSession[str] = PromptSession(history=history)

    async def read(self) -> str | None:
        """The next line; "" when Ctrl-C cleared the line; None on Ctrl-D (leave)."""
        try:
            # handle_sigint=False: prompt_toolkit would otherwise remove our SIGINT handler on return,
            # and Ctrl-C during the next turn would kill the session instead of cancelling the turn.
            return await self._session.prompt_async("› ", handle_sigint=False)
        except KeyboardInterrupt:
            return ""
        except EOFError:
            return None


async def ask_permission(spec: ToolSpec, arguments: dict[str, object], outside_sandbox: str | None = None) -> Decision:
    """Asks whether one tool call may run: once, always (this tool, this session), or no with a reason.

    With `outside_sandbox` (what the OS sandbox stopped): whether to run it again outside the sandbox."""
    shown = [printable(line) for line in json.dumps(arguments, indent=2, ensure_ascii=False).splitlines()]
    if len(shown) > QUESTION_ARGUMENT_LINES:
        shown = [*shown[:QUESTION_ARGUMENT_LINES], "  …"]
    about = (spec.description or "").strip().split("\n", 1)[0][:80]
    question = f"\nRun {spec.name}?"
    always = f"always {spec.name} this session"
    if outside_sandbox is not None:
        question = f"\n{spec.name}: {printable(outside_sandbox)}\nRun it again OUTSIDE the sandbox?"
        about, always = "", "always: re-run whatever the sandbox stops, this session"
    print_formatted_text(
        FormattedText([
            ("bold", question),
            ("", f"  {about}\n" if about else "\n"),
            ("ansibrightblack", "\n".join(shown)),
        ])
    )  # fmt: skip
    session: PromptSession[str] = PromptSession()
    try:
        while True:
            answer = await session.prompt_async(f"[y] yes once  [a] {always}  [n] no › ", handle_sigint=False)
            choice = answer.strip().lower()
            if choice in ("y", "yes"):
                return Decision("once")
            if choice in ("a", "always"):
                return Decision("always")
            if choice in ("n", "no"):
                reason = await session.prompt_async(
                    "why not? (the model reads this; Enter to skip) › ", handle_sigint=False
                )
                return Decision("deny", reason.strip())
    except KeyboardInterrupt:  # the terminal is raw here: Ctrl-C arrives as a key, not as SIGINT
        return Decision("cancel")
    except EOFError:
        return Decision("deny", "the user declined (Ctrl-D)")
