"""REPL input: a prompt with line editing and persistent history (prompt_toolkit); questions are in ui/ask.py."""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, InMemoryHistory


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
