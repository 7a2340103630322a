"""The interactive session: a prompt ready at once, servers and imports starting behind it, slash commands."""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial

import anyio
import anyio.lowlevel

from sprout_agent.config.definitions import CustomCommand
from sprout_agent.core.agent import Agent
from sprout_agent.core.errors import EXIT_OK, SproutError
from sprout_agent.core.events import changes_summary
from sprout_agent.core.messages import Image, ToolUse
from sprout_agent.core.permissions import Ask, Decision
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.faces.lifecycle import SignalWatch, open_face
from sprout_agent.faces.repl import view
from sprout_agent.faces.repl.asks import server_askers
from sprout_agent.faces.repl.login import login_offers
from sprout_agent.faces.slash_commands import (
    Line,
    custom_command,
    custom_for,
    custom_lines,
    expand,
    help_lines,
    names_for,
    parse,
    server_notes,
    server_rows,
    shared_command,
    tool_rows,
)
from sprout_agent.faces.terminal.input import PromptReader, TurnKeys
from sprout_agent.faces.terminal.prompt_attach import attach_mentions, mentions
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.faces.warm.title import name_run
from sprout_agent.mcp.prompts import attach_resources, command_name, mention, prompt_text
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.runtime import Runtime, open_runtime
from sprout_agent.trust.untrusted import printable

HELP_TAIL = """  /SERVER:PROMPT [ARG…]  a server's prompt as your turn (arguments in order, or NAME=VALUE)
Enter sends; \\+Enter or Alt+Enter adds a line. Tab completes /commands, @files and @server:uri resources;
@path attaches a file, @server:uri a server's resource.
Esc or Ctrl-C cancels the running turn; at the prompt Ctrl-C clears the line, twice on an empty line leaves;
Esc Esc on an empty line is /rewind."""
HELP = "\n".join(["Commands:", *help_lines("repl"), HELP_TAIL])


def help_text(custom: Sequence[CustomCommand]) -> str:
    """/help: ours, then the project's and the user's commands (.claude/commands)."""
    lines = custom_lines(custom_for(custom, "repl")[0])
    return "\n".join([HELP, *(["Custom commands (.claude/commands):", *lines] if lines else [])])


class Repl:
    def __init__(self, prepared: Prepared, renderer: TerminalRenderer, runtime: Runtime, keys: TurnKeys) -> None:
        self.prepared = prepared
        self.renderer = renderer
        self.runtime = runtime
        self.agent = runtime.agent
        self.keys = keys
        self.started = time.time()
        self.typed: dict[int, str] = {}  # turn number → the line typed for it (/rewind puts it back)

    async def command(self, line: str) -> bool:
        """Runs a slash command (the table in faces/slash_commands.py, or a server's prompt); False means leave."""
        found = parse(line, "repl")
        if (custom := custom_command(self.prepared.definitions.commands, line, "repl")) is not None:
            await self.turn(expand(*custom), typed=line)
            return True
        if found is None:
            name, _, argument = line[1:].partition(" ")
            if (text := await prompt_text(self.runtime.pool, name, argument.strip())) is not None:
                await self._run_turn(line, text)  # the server's messages are the user's turn, sent as they are
            else:
                self.renderer.say(f"unknown command /{name}; /help lists them", "yellow")
            return True
        command, argument = found
        match command.name:
            case "exit":
                return False
            case "help":
                self.renderer.say(help_text(self.prepared.definitions.commands))
            case "tools":
                # The whole first line: the table wraps it at word boundaries, where a cut would split a word.
                self.renderer.table("Tools the model sees", ("server", "tool", "description"), tool_rows(self.agent))
            case "servers":
                header = ("server", "state", "tools", "hooks", "start", "last error")
                self.renderer.table("MCP servers", header, server_rows(self.runtime))
                self._say(server_notes(self.runtime))
            case "rewind":
                from sprout_agent.faces.repl.rewind import rewind_command

                self.runtime = await rewind_command(self.runtime, self.renderer, self.keys, self.typed)
            case "login":
                from sprout_agent.faces.repl.login import login_command

                await login_command(self.runtime, self.renderer, argument)
            case _:
                self._say(await shared_command(self.runtime, command, argument) or [])
        return True

    def _say(self, lines: list[Line]) -> None:
        for text, style in lines:
            self.renderer.say(text, style)

    async def handle(self, watch: SignalWatch, line: str) -> bool:
        """Runs a prompt or a command so that Ctrl-C cancels just it; False means leave."""
        keep_going = True
        with anyio.CancelScope() as scope:
            watch.turn = scope
            self.keys.start(scope.cancel)  # Esc cancels like Ctrl-C
            try:
                if line.startswith("/"):
                    keep_going = await self.command(line)
                else:
                    await self.turn(line)
            except SproutError as error:
                self.renderer.say(f"error: {error}", "red")
            finally:
                await self.keys.stop()
                watch.turn = None
                self.renderer.close()
        if scope.cancelled_caught:
            self.renderer.say("cancelled", "yellow")
        return keep_going

    def close_fork(self, opened: Runtime) -> None:
        """The transcript of the fork a /rewind went on in, which the REPL opened (`open_runtime` closes its own)."""
        if self.runtime.transcript is not opened.transcript and self.runtime.transcript is not None:
            self.runtime.transcript.close()

    def leave_line(self, opened: Runtime) -> str | None:
        """How to come back to the session the REPL is in now (a fork, after /rewind)."""
        forked = self.runtime.session_id != opened.session_id
        recorded = bool(self.agent.history) or self.prepared.resume is not None or forked
        return view.leave_line(self.runtime.session_id, recorded and self.prepared.locations.sessions is not None)

    async def turn(self, text: str, typed: str | None = None) -> None:
        """A prompt (`typed`: the line as typed, when `text` is what a custom command made of it)."""
        pool = self.runtime.pool
        resources = {mention(item) for item in pool.resources()}
        attached = attach_mentions(text, self.prepared.options.cwd, skip=resources)
        full, notes = await attach_resources(pool, attached.text, mentions(text)) if resources else (attached.text, [])
        for note in (*attached.notes, *notes):
            self.renderer.say(printable(note), "yellow")
        await self._run_turn(typed or text, full, attached.images)  # the renderer reports how it ended

    async def _run_turn(self, typed: str, text: str, images: Sequence[Image] = ()) -> None:
        tracker = self.runtime.checkpoints
        before = len(tracker.turns) if tracker is not None else 0
        ended = False
        try:
            await self.agent.run_turn(text, images)
            ended = True
        finally:  # a cancelled turn is one too: it can be rewound
            if tracker is not None and len(tracker.turns) > before:
                turn = tracker.turns[before]
                self.typed[turn.number] = typed
                if not ended and turn.files:  # no TurnFinished says it: what it did before the cancel
                    self.renderer.say(changes_summary(len(turn.files), turn.added, turn.removed))


def permission_asker(renderer: TerminalRenderer, watch: SignalWatch, cwd: str, keys: TurnKeys | None = None) -> Ask:
    """`--permission-mode ask` in the terminal: the question, with the live region paused; Ctrl-C cancels the turn."""

    async def ask(spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        from sprout_agent.faces.terminal.ask import (
            ask_permission,  # rich and prompt_toolkit's full-app parts: on first question
        )

        if keys is None:
            decision = await ask_permission(renderer, spec, use.input, cwd, outside_sandbox=outside_sandbox)
        else:
            async with keys.paused():  # the question reads the keys itself
                decision = await ask_permission(renderer, spec, use.input, cwd, outside_sandbox=outside_sandbox)
        if decision.kind == "cancel" and watch.turn is not None:
            watch.turn.cancel()
            await anyio.lowlevel.checkpoint()  # raises the cancellation here
        return decision

    return ask


class EarlyInput:
    """Reads at the prompt while the runtime starts, so the prompt is ready at once.

    Answers `/help` itself; Ctrl-D or `/exit` before start-up finished cancels everything at once (the
    servers end, the imports are abandoned); the first line that needs the agent waits for it.
    """

    def __init__(
        self, reader: PromptReader, renderer: TerminalRenderer, first: str | None = None, help_said: str = HELP
    ) -> None:
        self.reader = reader
        self.renderer = renderer
        self.help = help_said
        self.started = False  # the runtime is open
        self._line: str | None = first  # `sprout-agent "PROMPT"`: no reading, the prompt is already there
        self._arrived = anyio.Event()
        if first is not None:
            renderer.say(f"› {first}", "bold")
            self._arrived.set()

    async def read(self, everything: anyio.CancelScope) -> None:
        while True:
            line = await self.reader.read()
            stripped = line.strip() if line is not None else None
            if stripped == "/help":
                self.renderer.say(self.help)
                continue
            if stripped == "":
                continue
            if not self.started and (stripped is None or stripped.split()[0] in ("/exit", "/quit")):
                everything.cancel()
                return
            if not self.started:
                self.renderer.say("starting MCP servers…", "dim")
            self._line = stripped
            self._arrived.set()
            return

    async def line(self) -> str | None:
        await self._arrived.wait()
        return self._line


async def run_repl(prepared: Prepared, renderer: TerminalRenderer) -> int:
    reader = PromptReader(prepared.locations.prompt_history, prepared.options.cwd)
    custom, shadowed = custom_for(prepared.definitions.commands, "repl")
    ours = names_for("repl") + [f"/{c.name}" for c in custom]
    reader.completer.commands = lambda: ours
    agent: list[Agent] = []  # the toolbar's agent, once the runtime is open
    reader.status = lambda: view.status_text(agent[0].model.name if agent else prepared.model, *agent[:1] or [None])
    leave: str | None = None
    async with open_face() as life:
        watch, group = life.watch, life.group
        keys = TurnKeys(reader, group)
        renderer.say(view.banner(prepared, prepared.model), "dim")
        for notice in shadowed:
            renderer.say(notice, "yellow")
        if prepared.resume is not None:
            for text, style in view.replay_lines(prepared.resume.history):
                renderer.say(text, style)
        early = EarlyInput(reader, renderer, prepared.options.first_prompt, help_text(prepared.definitions.commands))
        if prepared.options.first_prompt is None:
            group.start_soon(early.read, group.cancel_scope)
        elicit, approve = server_askers(renderer, watch, keys)
        async with open_runtime(
            prepared,
            renderer,
            ask=permission_asker(renderer, watch, str(prepared.options.cwd), keys),
            elicit=elicit,
            approve_sampling=approve,
        ) as runtime:
            early.started = True
            name_run(runtime.session_id, prepared.options.cwd)  # in ps and top
            repl = Repl(prepared, renderer, runtime, keys)
            agent.append(runtime.agent)
            pool = runtime.pool
            reader.completer.commands = lambda: [*ours, *(f"/{command_name(prompt)}" for prompt in pool.prompts())]
            reader.completer.resources = lambda: [mention(item) for item in pool.resources()]
            reader.refresh()
            renderer.say(view.servers_line(runtime.pool.status()), "dim")
            for offer in login_offers(runtime.pool.status()):
                renderer.say(offer, "yellow")

            async def lines() -> None:
                line = await early.line()
                while line is not None and await repl.handle(watch, line):
                    line = await _next_line(reader)

            try:
                await life.turns(lines, partial(runtime.agent.end_session, "signal"))
            finally:
                repl.close_fork(runtime)
            if life.signalled:
                group.cancel_scope.cancel()  # no leave line after a signal
            leave = repl.leave_line(runtime)
    if leave is not None:
        renderer.say(leave, "dim")
    return life.exit_code or EXIT_OK


async def _next_line(reader: PromptReader) -> str | None:
    """The next non-empty line; None on Ctrl-D."""
    while True:
        line = await reader.read()
        if line is None or line.strip():
            return line.strip() if line is not None else None
