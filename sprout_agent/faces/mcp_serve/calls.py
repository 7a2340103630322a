"""The `sprout` and `sprout-reply` calls: each prepares its run as `-p` does (consent, sandbox, hooks, budgets),
runs one turn on a runtime of its own and answers. The calls running at once are bounded (`--max-sessions`), and a
session can be replied to only through the server that began it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.errors import SproutError
from sprout_agent.faces.mcp_serve.arguments import BadArguments, Ceiling, reply_arguments, sprout_options
from sprout_agent.faces.mcp_serve.run import CallRun, refused
from sprout_agent.mcp.serving import Progress, ToolAnswer
from sprout_agent.session.prepared import prepare_in_directory

MAX_KNOWN = 1000  # sessions remembered for `sprout-reply`, the oldest forgotten first
CLOSE_SECONDS = 10.0  # how long the end of the server waits for a cancelled turn to wind down


@dataclass(frozen=True, slots=True)
class ServeSetup:
    """What `mcp serve` was started with: every call's template and ceiling, read under its own environment."""

    template: Options
    locations: Locations
    environ: Mapping[str, str]
    max_sessions: int = 4


@dataclass(slots=True)
class _Known:
    options: Options  # what the session was started with (its directory, model, mode, bounds)
    busy: bool = False


class Calls:
    def __init__(self, setup: ServeSetup, group: TaskGroup) -> None:
        """`group`: where the runs live, outside any one request, so a cancelled call ends its turn, not the
        runtime under it (which then closes in order, `_SessionEnd` included)."""
        self.setup = setup
        self.ceiling = Ceiling.of(setup.template, setup.environ)
        self.running: set[CallRun] = set()
        self.known: dict[str, _Known] = {}
        self._group = group

    async def sprout(self, arguments: dict[str, Any], progress: Progress) -> ToolAnswer:
        try:
            options = sprout_options(arguments, self.setup.template, self.ceiling)
        except BadArguments as error:
            return refused(str(error))
        return await self._call(options, None, progress)

    async def reply(self, arguments: dict[str, Any], progress: Progress) -> ToolAnswer:
        try:
            session_id, prompt = reply_arguments(arguments)
        except BadArguments as error:
            return refused(str(error))
        known = self.known.get(session_id)
        if known is None:
            return refused(f"no session {session_id!r} began here: reply with a session_id this server answered with")
        if known.busy:
            return refused(f"session {session_id} is answering another call: reply once that call has answered")
        return await self._call(replace(known.options, prompt=prompt, resume_id=session_id), known, progress)

    async def _call(self, options: Options, known: _Known | None, progress: Progress) -> ToolAnswer:
        bound = self.setup.max_sessions
        if len(self.running) >= bound:
            return refused(
                f"sprout-agent is running {len(self.running)} sessions, its bound (mcp serve --max-sessions {bound}): "
                "call again once one of them has answered"
            )
        if known is not None:
            known.busy = True
        began_here = known is None
        run: CallRun | None = None
        try:
            try:
                prepared = await anyio.to_thread.run_sync(
                    prepare_in_directory, options, self.setup.locations, self.setup.environ
                )
            except SproutError as error:
                return refused(str(error))
            run = CallRun(prepared)
            self.running.add(run)
            if known is None and prepared.locations.sessions is not None:
                # Known (and busy) from now: a cancelled call's session can be replied to once its turn wound down.
                known = self._remember(run.session_id, replace(options, prompt=None))
            self._group.start_soon(run.own)
            return await run.answer(progress)
        finally:
            if known is not None:
                known.busy = False
            if run is not None:
                self.running.discard(run)
                if began_here and not run.began:  # nothing was recorded: there is no session to reply to
                    self.known.pop(run.session_id, None)

    def _remember(self, session_id: str, options: Options) -> _Known:
        self.known[session_id] = known = _Known(options, busy=True)
        while len(self.known) > MAX_KNOWN:
            del self.known[next(iter(self.known))]
        return known

    async def end_all(self, reason: str = "signal") -> None:
        """After a signal: each running session's `_SessionEnd` while its servers are still up."""
        async with anyio.create_task_group() as group:
            for run in list(self.running):
                group.start_soon(run.end_session, reason)

    async def close(self) -> None:
        """The client went away: every running turn is cancelled and its runtime closes (bounded)."""
        for run in list(self.running):
            run.cancel()
        with anyio.move_on_after(CLOSE_SECONDS if self.running else 0):
            for run in list(self.running):
                await run.done.wait()
