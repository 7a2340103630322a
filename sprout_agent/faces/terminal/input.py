"""REPL input (prompt_toolkit): the prompt line (multi-line keys, Tab completion, history, status toolbar, Ctrl-C
twice to leave, Esc Esc on an empty line for /rewind), the keys read while a turn runs (Esc cancels); questions
are in ask.py."""

from __future__ import annotations

import os
import termios
import tty
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from prompt_toolkit import PromptSession, print_formatted_text
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import ansi_escape_sequences
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.patch_stdout import patch_stdout

from sprout_agent.faces.terminal.prompt_attach import command_candidates, file_candidates
from sprout_agent.trust.private_files import open_private
from sprout_agent.trust.untrusted import visible

QUESTION_ARGUMENT_LINES = 20
LEAVE_HINT = "press Ctrl-C again to leave"
REWIND = "/rewind"  # what Esc Esc on an empty prompt types
# Shift+Enter as kitty's CSI-u and xterm's modifyOtherKeys report it; prompt_toolkit reads the second as Enter
# and has no Shift+Enter key, so both are read as a key no keyboard sends (F24), bound to a newline. Ctrl-J is
# not one: a line typed ahead in cooked mode arrives with its Enter turned into \n, which must still send.
SHIFT_ENTER_SEQUENCES = ("\x1b[13;2u", "\x1b[27;2;13~")
SHIFT_ENTER = Keys.F24


class MentionCompleter(Completer):
    """Tab: slash commands at the start of the line, files after `@` (prompt_attach decides which)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        # Ours, then the servers' `/server:prompt` commands; the resource mentions (`server:uri`). The REPL sets them.
        self.commands: Callable[[], Sequence[str]] = lambda: ()
        self.resources: Callable[[], Sequence[str]] = lambda: ()

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before:
            for name in command_candidates(before, self.commands()):  # a server's names: shown escaped
                yield Completion(name, start_position=-len(before), display=visible(name))
            return
        word = before.rsplit(None, 1)[-1] if before and not before[-1].isspace() else ""
        if word.startswith("@"):
            names = [name for name in self.resources() if name.startswith(word[1:])]
            for name in names + file_candidates(word[1:], self.cwd):  # names are untrusted: shown escaped
                yield Completion("@" + name, start_position=-len(word), display=visible(name))


class PromptReader:
    """The `› ` prompt. Enter sends; `\\`+Enter, Alt/Esc+Enter (and Shift+Enter where the terminal
    reports it) insert a newline. While it shows, whatever is printed goes above it and it is redrawn."""

    def __init__(self, history_file: Path | None, cwd: Path | None = None) -> None:
        self.status: Callable[[], str] = lambda: ""  # the bottom toolbar's text; the REPL sets it
        self.completer = MentionCompleter(cwd or Path.cwd())
        self.type_ahead = ""  # typed while a turn ran (TurnKeys): the next prompt starts with it
        self._armed = False  # Ctrl-C on an empty line once: the next one leaves
        for sequence in SHIFT_ENTER_SEQUENCES:
            ansi_escape_sequences.ANSI_SEQUENCES[sequence] = SHIFT_ENTER
        self._session: PromptSession[str] = PromptSession(
            history=_history(history_file),
            key_bindings=self._bindings(),
            completer=self.completer,
            complete_while_typing=False,
            bottom_toolbar=self._toolbar,
            prompt_continuation="  ",
        )
        self._session.default_buffer.on_text_changed += self._disarm

    def _disarm(self, _buffer: object) -> None:
        self._armed = False

    def refresh(self) -> None:
        """Redraws the toolbar (its text changed) if the prompt is showing."""
        app = self._session.app
        if app.is_running:
            app.invalidate()

    async def read(self) -> str | None:
        """The next line; "" when Ctrl-C cleared the line; None on Ctrl-D or a second Ctrl-C (leave)."""
        default, self.type_ahead = self.type_ahead, ""
        if "\r" in default:  # Enter was typed during the turn: that line is sent as typed, with no prompt
            line, self.type_ahead = default.split("\r", 1)
            print_formatted_text(FormattedText([("bold", f"› {visible(line)}")]))
            return line
        try:
            # raw: rich's colours and cursor moves pass through the proxy intact.
            with patch_stdout(raw=True):
                # handle_sigint=False: prompt_toolkit would otherwise remove our SIGINT handler on return,
                # and Ctrl-C during the next turn would kill the session instead of cancelling the turn.
                return await self._session.prompt_async("› ", handle_sigint=False, default=default)
        except KeyboardInterrupt:
            return ""
        except EOFError:
            return None
        finally:
            self._armed = False

    def _toolbar(self) -> str:
        return LEAVE_HINT if self._armed else self.status()

    def _bindings(self) -> KeyBindings:
        bindings = KeyBindings()

        @bindings.add("enter")
        def _(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if buffer.document.text_before_cursor.endswith("\\"):
                buffer.delete_before_cursor(1)
                buffer.insert_text("\n")
            else:
                buffer.validate_and_handle()

        @bindings.add("escape", "enter")
        @bindings.add(SHIFT_ENTER)
        def _(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @bindings.add("escape", "escape", filter=Condition(lambda: not self._session.default_buffer.text))
        def _(event: KeyPressEvent) -> None:
            # Esc Esc on an empty prompt: /rewind, shown on the line it leaves but kept out of the history.
            event.current_buffer.text = REWIND
            event.app.exit(result=REWIND)

        @bindings.add("c-c")
        def _(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()  # a line typed: Ctrl-C clears it
            elif self._armed:
                event.app.exit(exception=EOFError())
                return
            else:
                self._armed = True  # shown in the toolbar until the next key changes the line
            event.app.invalidate()

        return bindings


def _history(history_file: Path | None) -> History:
    if history_file is not None:
        try:
            os.close(open_private(history_file))  # what was typed (a pasted key too): 0600 before FileHistory
            return FileHistory(str(history_file))
        except OSError:
            pass  # an unwritable data dir costs history, not the session
    return InMemoryHistory()


class TurnKeys:
    """While a turn runs: the terminal in cbreak mode (no echo; Ctrl-C still a signal), a lone Esc cancels the
    turn, and printable keys are kept as type-ahead for the next prompt. Paused while a question is asked."""

    def __init__(self, reader: PromptReader, group: anyio.abc.TaskGroup, fd: int = 0) -> None:
        self.reader = reader
        self.group = group
        self.fd = fd
        self._scope: anyio.CancelScope | None = None
        self._saved: list[Any] | None = None
        self._on_escape: Callable[[], None] = lambda: None
        self._done = anyio.Event()

    def start(self, on_escape: Callable[[], None]) -> None:
        if not os.isatty(self.fd):
            return
        self._on_escape = on_escape
        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd, termios.TCSANOW)
        self._scope, self._done = anyio.CancelScope(), anyio.Event()
        self.group.start_soon(self._watch, self._scope, self._done)

    async def stop(self) -> None:
        """Ends the watch and restores the terminal before returning: a prompt may start right after, and its
        reader on the same file descriptor must not be removed by this one's clean-up."""
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None
            with anyio.CancelScope(shield=True):
                await self._done.wait()
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    @asynccontextmanager
    async def paused(self) -> AsyncGenerator[None]:
        running = self._scope is not None
        await self.stop()
        try:
            yield
        finally:
            if running:
                self.start(self._on_escape)

    async def _watch(self, scope: anyio.CancelScope, done: anyio.Event) -> None:
        with scope:
            try:
                await self._read_keys(scope)
            finally:
                done.set()

    async def _read_keys(self, scope: anyio.CancelScope) -> None:
        while True:
            await anyio.wait_readable(self.fd)
            if scope.cancel_called:
                return  # stopped between the wake-up and now: the bytes belong to the next reader
            self._keys(os.read(self.fd, 1024))

    def _keys(self, data: bytes) -> None:
        """A lone Esc (at the end of what arrived) cancels; escape sequences (arrows, Alt+key) are skipped."""
        text = data.decode("utf-8", errors="ignore")
        kept, index = "", 0
        while index < len(text):
            char = text[index]
            if char != "\x1b":
                kept += char
            elif index + 1 == len(text):
                self._on_escape()
            elif text[index + 1] in "[O":  # CSI/SS3: runs to a final byte in @..~
                index += 2
                while index < len(text) and not "@" <= text[index] <= "~":
                    index += 1
            else:
                index += 1  # Alt+key
            index += 1
        self._keep(kept)

    def _keep(self, text: str) -> None:
        """Type-ahead, edited only by Backspace; an Enter in it ends a line to send."""
        kept = self.reader.type_ahead
        for char in text:
            if char in ("\x7f", "\b"):
                kept = kept[:-1]
            elif char in ("\r", "\n"):
                kept += "\r"  # Enter: the next prompt sends the line before it at once
            elif char.isprintable():
                kept += char
        self.reader.type_ahead = kept
