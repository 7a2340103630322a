"""The ACP (protocol version 1) request handler and `serve`: initialize, session/new, session/load,
session/prompt and session/cancel, each session with its own servers; stdin closed ends them all."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from sprout_agent import __version__
from sprout_agent.core.errors import EXIT_OK
from sprout_agent.faces.acp.auth import AUTH_METHODS, authenticate
from sprout_agent.faces.acp.lines import LineReader, Writer, guard_stdio
from sprout_agent.faces.acp.prompt_content import image_input, prompt_content
from sprout_agent.faces.acp.session_template import AcpSetup
from sprout_agent.faces.acp.wire import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    Connection,
    Json,
    Reply,
    RpcError,
)
from sprout_agent.faces.lifecycle import open_face

if TYPE_CHECKING:
    from sprout_agent.faces.acp.sessions import AcpSession
    from sprout_agent.session.prepared import Prepared

# Importing the sessions' machinery (the loop, config, settings) waits for the first session:
# `initialize` is answered before any of it loads.

PROTOCOL_VERSION = 1  # version 2 is an incompatible draft: never claim it
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


class AcpServer:
    """Handlers that answer at once are plain functions, run in wire order (wire.Connection): the session a
    `session/load` opens exists for a prompt sent right behind it, and that prompt for the cancel behind it."""

    def __init__(self, options: AcpSetup, writer: Writer, group: TaskGroup) -> None:
        self.options = options
        self.sessions: dict[str, AcpSession] = {}
        self.client_capabilities: object = None  # from initialize: the editor's files and terminals
        self._group = group  # the sessions' runtimes live here, so end-of-input ends them all
        self.conn = Connection(
            writer,
            {
                "initialize": self.initialize,
                "authenticate": lambda params: authenticate(params, os.environ, options.locations),
                "session/new": self.new_session,
                "session/load": self.load_session,
                "session/prompt": self.prompt,
                "session/set_mode": self.set_mode,
                "session/set_config_option": self.set_config_option,
                "session/list": self.list_sessions,
                "session/close": self.close_session,
            },
            {"session/cancel": self.cancel},
        )

    def initialize(self, params: Json) -> Json:
        version = params.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise RpcError(INVALID_PARAMS, "Invalid params: protocolVersion must be a non-negative integer")
        self.client_capabilities = params.get("clientCapabilities")
        capabilities: Json = {
            "loadSession": self.options.locations.sessions is not None,
            "promptCapabilities": {"image": image_input(self.options), "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            # close ends a session's servers; list reads the recorded sessions (none when nothing is recorded)
            "sessionCapabilities": {"close": {}, **({"list": {}} if self.options.locations.sessions else {})},
        }
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": capabilities,
            "authMethods": AUTH_METHODS,
            "agentInfo": {"name": "sprout-agent", "title": "sprout-agent", "version": __version__},
        }

    def new_session(self, params: Json) -> Reply:
        from sprout_agent.faces.acp.commands import available_commands
        from sprout_agent.faces.acp.setup import prepare_session

        cwd = _absolute_dir(params.get("cwd"))
        session = self._start(prepare_session(self.options, cwd, params.get("mcpServers"), None))
        answer = {"sessionId": session.session_id, **_pickers(session), "_meta": _meta(session.prepared)}
        custom = session.prepared.definitions.commands
        return Reply(answer, lambda: session.updates.send(available_commands((), custom)))

    def load_session(self, params: Json) -> Reply:
        from sprout_agent.faces.acp.commands import available_commands
        from sprout_agent.faces.acp.replay import replay
        from sprout_agent.faces.acp.setup import prepare_session

        directory = self.options.locations.sessions
        if directory is None:
            raise RpcError(METHOD_NOT_FOUND, "Method not found: session/load (loadSession is not advertised)")
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId must be a session id string")
        if session_id in self.sessions:
            raise RpcError(INVALID_PARAMS, f"session {session_id} is already open")
        cwd = _absolute_dir(params.get("cwd"))
        if not (directory / f"{session_id}.jsonl").is_file():  # an exact id: no prefix matching here
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: no stored session {session_id}")
        prepared = prepare_session(self.options, cwd, params.get("mcpServers"), session_id)
        session = self._start(prepared)
        if prepared.resume is not None:  # the spec: the whole history before the response
            replay(prepared.resume.history, session.updates, str(cwd))
        custom = prepared.definitions.commands
        return Reply(
            {**_pickers(session), "_meta": _meta(prepared)},
            lambda: session.updates.send(available_commands((), custom)),
        )

    def prompt(self, params: Json) -> Awaitable[Json]:
        """Claims the session now (a cancel right behind the prompt cancels it), then runs the turn."""
        session = self._session(params)
        text, images = prompt_content(params.get("prompt"))
        return _stop_reason(session.prompt(text, images))

    def set_mode(self, params: Json) -> Awaitable[Json]:
        return _empty(self._session(params).set_mode(params.get("modeId")))

    def set_config_option(self, params: Json) -> Awaitable[Json]:
        if params.get("type", "select") != "select":  # our options are selects: a boolean names none of them
            raise RpcError(INVALID_PARAMS, "Invalid params: every config option of this agent is a select")
        changed = self._session(params).set_option(params.get("configId"), params.get("value"))
        return _answer("configOptions", changed)

    def list_sessions(self, params: Json) -> Awaitable[Json]:
        from sprout_agent.faces.acp.listing import session_page

        directory = self.options.locations.sessions
        if directory is None:
            raise RpcError(METHOD_NOT_FOUND, "Method not found: session/list (sessions are not recorded)")
        return session_page(directory, params)

    def close_session(self, params: Json) -> Awaitable[Json]:
        """Cancels its turn, ends it (`_SessionEnd`, then its servers) and forgets it: later requests naming it
        are Resource not found, as for any unknown session."""
        session = self._session(params)
        del self.sessions[session.session_id]
        session.cancel()
        session.close()
        return _empty(_closed(session))

    def cancel(self, params: Json) -> None:
        """A notification has no answer to carry an error: a cancel for no session (or a malformed one) is ignored."""
        session_id = params.get("sessionId")
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is not None:
            session.cancel()

    async def close_sessions(self, reason: str = "close") -> None:
        """End of input (or a signal): every session ends (`_SessionEnd`, bounded by its hook timeout), then its
        servers."""
        sessions = list(self.sessions.values())
        for session in sessions:
            session.close(reason)
        bound = max((s.prepared.settings.hook_timeout_ms for s in sessions), default=0) / 1000
        with anyio.move_on_after(bound + 0.5):  # what is left then is cancelled with the group, as before
            for session in sessions:
                await session.closed.wait()

    def _session(self, params: Json) -> AcpSession:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId must be a string")
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: no session {session_id}")
        return session

    def _start(self, prepared: Prepared) -> AcpSession:
        from sprout_agent.core.events import Notice
        from sprout_agent.faces.acp.editor_host import EditorOffers
        from sprout_agent.faces.acp.sessions import AcpSession

        session = AcpSession(prepared, self.conn, EditorOffers.of(self.client_capabilities))
        for notice in prepared.loaded.notices:  # shown when the first prompt starts
            session.updates.emit(Notice(notice, "warning"))
        self.sessions[session.session_id] = session
        self._group.start_soon(session.own)
        return session


async def _stop_reason(turn: Awaitable[str]) -> Json:
    return {"stopReason": await turn}


async def _empty(work: Awaitable[None]) -> Json:
    await work
    return {}


async def _answer(key: str, work: Awaitable[object]) -> Json:
    return {key: await work}


async def _closed(session: AcpSession) -> None:
    """Bounded as the end of input bounds it: the `_SessionEnd` hook's timeout, then a moment for the servers."""
    with anyio.move_on_after(session.prepared.settings.hook_timeout_ms / 1000 + 0.5):
        await session.closed.wait()


def _pickers(session: AcpSession) -> Json:
    """The mode and model pickers an editor shows: `modes` (our permission modes) and `configOptions`."""
    from sprout_agent.faces.acp.choices import mode_state

    return {"modes": mode_state(session.mode()), "configOptions": session.config_options()}


def _meta(prepared: Prepared) -> Json:
    """Ours, under ACP's extension field: the sandbox the session's commands run under (as stream-json `init`)."""
    return {"sprout-agent": {"sandbox": prepared.sandbox.record()}}


def _absolute_dir(raw: object) -> Path:
    if not isinstance(raw, str) or not raw:
        raise RpcError(INVALID_PARAMS, "Invalid params: cwd must be a string")
    path = Path(raw)
    if not path.is_absolute():
        raise RpcError(INVALID_PARAMS, f"Invalid params: cwd must be an absolute path, got {raw!r}")
    if not path.is_dir():
        raise RpcError(INVALID_PARAMS, f"Invalid params: cwd {raw} is not a directory")
    return path


def serve(options: AcpSetup) -> int:
    """Runs until the client closes our stdin (or a signal); every session's servers end with it."""
    read_fd, write_fd = guard_stdio()
    return anyio.run(_main, options, read_fd, write_fd)


async def run(options: AcpSetup, reader: LineReader, writer: Writer, *, signals: bool = False) -> int:
    """Serves one client until end-of-input or a signal; the sessions (and their servers) end with it, each with
    its `_SessionEnd` (bounded), as the other faces end theirs. Returns the exit code."""
    async with open_face(signals=signals) as life:
        server = AcpServer(options, writer, life.group)
        await life.turns(partial(server.conn.serve, reader), partial(server.close_sessions, "signal"))
        if not life.signalled:
            await server.close_sessions()
    return life.exit_code or EXIT_OK


async def _main(options: AcpSetup, read_fd: int, write_fd: int) -> int:
    return await run(options, LineReader(read_fd), Writer(write_fd), signals=True)
