"""One call's run: its runtime (opened as every face opens one), its one turn, the steps it reports as progress, and
its answer as text and structured content."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import anyio

from sprout_agent.core.agent import TurnResult
from sprout_agent.core.errors import EXIT_OK, exit_code_for_stop, sprout_error_in
from sprout_agent.core.events import Event, FileChange, ModelWaiting, ServerFailed, ToolStarted, TurnFinished
from sprout_agent.mcp.serving import Progress, ToolAnswer
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.runtime import new_session_id, open_runtime
from sprout_agent.trust.untrusted import printable


def refused(why: str, session_id: str = "") -> ToolAnswer:
    """A call that did not run (or could not finish): the tool's error, with the same structured shape."""
    return ToolAnswer(why, _structured(why, session_id, "error", True, 0.0, ()), True)


class CallRun:
    """Runs in the server's task group; the request that started it waits on `answer`."""

    def __init__(self, prepared: Prepared) -> None:
        self.prepared = prepared
        self.prompt = prepared.options.prompt or ""
        self.session_id = new_session_id(prepared)
        self.began = False  # the runtime opened: the session exists and can be replied to
        self.done = anyio.Event()
        self.result: TurnResult | None = None
        self.finished: TurnFinished | None = None
        self.error: str | None = None
        self.notices = [*prepared.loaded.notices, *prepared.held_back_notices()]
        self.spent = (0.0, 0.0)  # (this call, the session's earlier calls), in USD
        self._turn = anyio.CancelScope()
        self._end_session: Any = None
        self._steps, self._step_reader = anyio.create_memory_object_stream[str](math.inf)

    def emit(self, event: Event) -> None:
        """The events a step is made of become progress; the rest is for other faces."""
        match event:
            case ModelWaiting(request_number=number):
                self._step(f"model request {number}")
            case ToolStarted(name=name):
                self._step(f"tool {printable(name)}")
            case TurnFinished():
                self.finished = event
            case ServerFailed(server=server, reason=reason):
                self.notices.append(f"server {printable(server)} failed to start: {printable(reason)}")
            case _:
                pass

    def _step(self, message: str) -> None:
        with contextlib.suppress(anyio.ClosedResourceError):  # a step after the run ended: nobody reads it
            self._steps.send_nowait(message)

    async def own(self) -> None:
        """Opens the runtime, runs the turn (a cancelled call cancels only the turn), closes it in order."""
        try:
            async with open_runtime(self.prepared, self.emit, session_id=self.session_id) as runtime:
                self.began = True
                self._end_session = runtime.agent.end_session
                ledger = runtime.agent.ledger
                try:
                    with self._turn:
                        self.result = await runtime.agent.run_turn(self.prompt)
                finally:
                    self.spent = (ledger.cost, ledger.earlier)
        except Exception as error:
            found = sprout_error_in(error)
            self.error = str(found) if found is not None else f"internal error: {type(error).__name__}: {error}"
        finally:
            self._end_session = None
            self._steps.close()
            self.done.set()

    def cancel(self) -> None:
        self._turn.cancel()

    async def end_session(self, reason: str) -> None:
        if self._end_session is not None:
            await self._end_session(reason)

    async def answer(self, progress: Progress) -> ToolAnswer:
        """Reports the steps until the run ends, then answers. Cancelled (the caller's `notifications/cancelled`):
        the turn is cancelled, and the run closes its runtime before this returns, so the session's history is
        whole when it is replied to."""
        try:
            async with self._step_reader:
                async for step in self._step_reader:
                    await progress(step)
            await self.done.wait()
        except anyio.get_cancelled_exc_class():
            self.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(30):
                await self.done.wait()
            raise
        return self._answer()

    def _answer(self) -> ToolAnswer:
        if self.error is not None or self.result is None:
            why = self.error or "the turn ended without an answer"
            return refused(why, self.session_id if self.began else "")
        result, finished = self.result, self.finished
        files = finished.changes.files if finished is not None and finished.changes is not None else ()
        is_error = exit_code_for_stop(result.stop_reason) != EXIT_OK
        data = _structured(result.text, self.session_id, result.stop_reason, is_error, self.spent[0], files)
        data["session_cost_usd"] = sum(self.spent)
        if result.structured is not None:
            data["structured_output"] = result.structured
        if result.error:
            data["error"] = result.error
        if self.notices:
            data["notices"] = list(self.notices)
        text = result.text or result.error or f"(no answer: {result.stop_reason})"
        return ToolAnswer(text, data, is_error)


def _structured(
    text: str, session_id: str, stop_reason: str, is_error: bool, cost: float, files: tuple[FileChange, ...]
) -> dict[str, Any]:
    return {
        "result": text,
        "session_id": session_id,
        "stop_reason": stop_reason,
        "is_error": is_error,
        "cost_usd": cost,
        "files_changed": [{"path": f.path, "status": f.status, "added": f.added, "removed": f.removed} for f in files],
    }
