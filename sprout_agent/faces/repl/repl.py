"""The interactive session: a prompt ready at once, servers and imports starting behind it, slash commands."""

from __future__ import annotations

import time

import anyio
import anyio.lowlevel

from sprout_agent.config.settings import model_id
from sprout_agent.core.agent import Agent
from sprout_agent.core.errors import EXIT_OK, SproutError, UsageError
from sprout_agent.core.hooks import is_hook
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permissions import Ask, Decision
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.core.status import context_line, counted_context_line
from sprout_agent.faces.repl import view
from sprout_agent.faces.repl.asks import server_askers
from sprout_agent.faces.repl.login import login_offers
from sprout_agent.faces.signals import SignalWatch
from sprout_agent.faces.terminal.input import PromptReader, TurnKeys
from sprout_agent.faces.terminal.prompt_attach import attach_mentions, mentions
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.mcp.prompts import attach_resources, command_name, mention, prompt_text
from sprout_agent.model.facts import ModelFacts
from sprout_agent.model.switch import effort_command, switch_agent
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.runtime import Runtime, facts_for, open_runtime
from sprout_agent.trust.untrusted import printable

HELP = """Commands:
  /help      this list
  /tools     the tools the model sees, by server
  /servers   each server's state, tools, hooks, start time, last error; config files read
  /clear     start a new conversation (the _Stop budget spans the whole session)
  /compact [focus]  summarise the conversation now, optionally focused
  /context   how full the context window is
  /cost      tokens and cost so far
  /model [NAME]  show the model, or switch to NAME for the next request
  /login NAME  log in to a remote server with OAuth (the browser), then start it
  /effort [LEVEL]  show the effort level and the model's choices, or set it
  /exit      leave (Ctrl-D works too)
  /SERVER:PROMPT [ARG…]  a server's prompt as your turn (arguments in order, or NAME=VALUE)
Enter sends; \\+Enter or Alt+Enter adds a line. Tab completes /commands, @files and @server:uri resources;
@path attaches a file, @server:uri a server's resource.
Esc or Ctrl-C cancels the running turn; at the prompt Ctrl-C clears the line, twice on an empty line leaves."""


class Repl:
    def __init__(self, prepared: Prepared, renderer: TerminalRenderer, runtime: Runtime, keys: TurnKeys) -> None:
        self.prepared = prepared
        self.renderer = renderer
        self.runtime = runtime
        self.agent = runtime.agent
        self.keys = keys
        self.started = time.time()

    async def command(self, line: str) -> bool:
        """Runs a slash command; False means leave."""
        name = line.split(maxsplit=1)[0]
        argument = line[len(name) :].strip()
        if name in ("/exit", "/quit"):
            return False
        if name == "/help":
            self.renderer.say(HELP)
        elif name == "/tools":
            self._tools(self.agent)
        elif name == "/servers":
            self._servers(self.agent)
        elif name == "/clear":
            await self.agent.clear_session()
            self.renderer.say("new conversation", "dim")
        elif name in ("/compact", "/context", "/cost"):
            await self._context_command(name, argument)
        elif name in ("/model", "/effort"):
            await self._model_command(name, argument)
        elif name == "/login":
            from sprout_agent.faces.repl.login import login_command

            await login_command(self.runtime, self.renderer, argument)
        elif (text := await prompt_text(self.runtime.pool, name[1:], argument)) is not None:
            await self.agent.run_turn(text)  # the server's messages are the user's turn, sent as they are
        else:
            self.renderer.say(f"unknown command {name}; /help lists them", "yellow")
        return True

    async def _model_command(self, name: str, argument: str) -> None:
        if name == "/model":
            await self._model(argument)
            return
        text, failed = effort_command(self.agent.model, argument)
        self.renderer.say(text, "red" if failed else "dim")

    async def _context_command(self, name: str, argument: str) -> None:
        agent = self.agent
        if name == "/cost":
            self.renderer.say(agent.ledger.summary())
        elif name == "/context":
            self.renderer.say(await counted_context_line(agent))
        else:
            await agent.compact("manual", focus=argument or None)
            self.renderer.say(context_line(agent), "dim")

    async def _model(self, argument: str) -> None:
        """Switches the model for the next request; the conversation, the ledger and the window follow it, and
        the new model's facts (window, capabilities) are fetched so that its settings are checked."""
        agent, settings = self.agent, self.prepared.settings
        if not argument:
            self.renderer.say(f"model: {agent.model.name}{_facts_line(agent.model)}")
            return
        try:
            name = model_id(argument, "/model")
        except UsageError as error:
            self.renderer.say(f"cannot switch: {error}", "red")
            return
        facts = await facts_for(self.prepared, name)
        try:
            notes = switch_agent(agent, name, facts, settings)
        except ValueError as error:
            self.renderer.say(f"cannot switch: {error}", "red")
            return
        for note in notes:
            self.renderer.say(note, "yellow")
        self.renderer.say(f"model: {name} (from the next request), window {facts.window}", "dim")

    def _tools(self, agent: Agent) -> None:
        # The whole first line: the table wraps it at word boundaries, where a cut would split a word.
        rows = [(spec.server, spec.name, printable((spec.description or "").split("\n", 1)[0])) for spec in agent.tools]
        self.renderer.table("Tools the model sees", ("server", "tool", "description"), rows)

    def _servers(self, agent: Agent) -> None:
        pool = self.runtime.pool
        hook_names: dict[str, list[str]] = {}
        for spec in pool.tools():
            if is_hook(spec):
                hook_names.setdefault(spec.server, []).append(spec.tool)
        rows: list[tuple[str, ...]] = []
        for status in pool.status():
            hooks = ", ".join(hook_names.get(status.name, [])) or "-"
            active = "active" if agent.hooks.allows(status.name) else "off"
            rows.append(
                (
                    status.name if status.url is None else f"{status.name} ({status.transport} {status.url})",
                    status.state,
                    str(status.tool_count),
                    f"{hooks} ({active})" if hooks != "-" else "-",
                    f"{status.start_seconds:.2f}s" if status.start_seconds is not None else "-",
                    (status.last_error or "")[:60],
                )
            )
        self.renderer.table("MCP servers", ("server", "state", "tools", "hooks", "start", "last error"), rows)
        files = ", ".join(str(p) for p in self.prepared.loaded.files_read) or "none (built-in servers only)"
        self.renderer.say(f"config files read: {files}", "dim")
        self.renderer.say(f"sandbox for dev__bash: {self.prepared.sandbox.describe()}", "dim")

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

    async def turn(self, text: str) -> None:
        pool = self.runtime.pool
        resources = {mention(item) for item in pool.resources()}
        attached = attach_mentions(text, self.prepared.options.cwd, skip=resources)
        full, notes = await attach_resources(pool, attached.text, mentions(text)) if resources else (attached.text, [])
        for note in (*attached.notes, *notes):
            self.renderer.say(printable(note), "yellow")
        await self.agent.run_turn(full, attached.images)  # the renderer reports how it ended


def _facts_line(model: object) -> str:
    facts = getattr(model, "facts", None)
    if not isinstance(facts, ModelFacts):
        return ""
    effort = getattr(model, "effort", None) or "default"
    thinking = getattr(model, "thinking", None) or "the model's default"
    return f" (window {facts.window}, from the {facts.source}; thinking {thinking}, effort {effort})"


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

    def __init__(self, reader: PromptReader, renderer: TerminalRenderer, first: str | None = None) -> None:
        self.reader = reader
        self.renderer = renderer
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
                self.renderer.say(HELP)
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
    watch = SignalWatch()
    agent: list[Agent] = []  # the toolbar's agent, once the runtime is open
    reader.status = lambda: view.status_text(agent[0].model.name if agent else prepared.model, *agent[:1] or [None])
    leave: str | None = None
    async with anyio.create_task_group() as group:
        watch.everything = group.cancel_scope
        group.start_soon(watch.watch)
        keys = TurnKeys(reader, group)
        renderer.say(view.banner(prepared, prepared.model), "dim")
        if prepared.resume is not None:
            for text, style in view.replay_lines(prepared.resume.history):
                renderer.say(text, style)
        early = EarlyInput(reader, renderer, prepared.options.first_prompt)
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
            repl = Repl(prepared, renderer, runtime, keys)
            agent.append(runtime.agent)
            pool = runtime.pool
            reader.completer.commands = lambda: [f"/{command_name(prompt)}" for prompt in pool.prompts()]
            reader.completer.resources = lambda: [mention(item) for item in pool.resources()]
            reader.refresh()
            renderer.say(view.servers_line(runtime.pool.status()), "dim")
            for offer in login_offers(runtime.pool.status()):
                renderer.say(offer, "yellow")
            with anyio.CancelScope() as lines:  # a signal ends the session, not the servers: _SessionEnd runs
                watch.everything = lines
                line = await early.line()
                while line is not None and await repl.handle(watch, line):
                    line = await _next_line(reader)
            watch.everything = group.cancel_scope
            if watch.received is not None:
                await runtime.agent.end_session("signal")
                group.cancel_scope.cancel()  # as before: no leave line after a signal
            recorded = bool(runtime.agent.history) or prepared.resume is not None
            leave = view.leave_line(runtime.session_id, recorded and prepared.locations.sessions is not None)
        group.cancel_scope.cancel()  # a clean end: the store is flushed and the servers ended above
    if leave is not None:
        renderer.say(leave, "dim")
    return watch.exit_code or EXIT_OK


async def _next_line(reader: PromptReader) -> str | None:
    """The next non-empty line; None on Ctrl-D."""
    while True:
        line = await reader.read()
        if line is None or line.strip():
            return line.strip() if line is not None else None
