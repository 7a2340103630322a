"""The REPL's answers to what MCP servers ask (a form or URL, a model call): one question at a time, asked
through the terminal while a turn runs, with the turn's key reader paused; outside a turn nobody is looking,
so a question then is declined."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext

import anyio

from sprout_agent.faces.lifecycle import SignalWatch
from sprout_agent.faces.terminal.input import TurnKeys
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.mcp.elicitation import Answer, Elicitor, Question
from sprout_agent.mcp.sampling import Approve, SamplingRequest


def server_askers(renderer: TerminalRenderer, watch: SignalWatch, keys: TurnKeys | None) -> tuple[Elicitor, Approve]:
    one_at_a_time = anyio.Lock()  # two servers asking at once would draw two questions over each other

    def paused() -> AbstractAsyncContextManager[object]:
        return keys.paused() if keys is not None else nullcontext()

    async def elicit(question: Question) -> Answer:
        from sprout_agent.faces.terminal.elicit_form import (
            ask_elicitation,  # prompt_toolkit's full-app parts: on first use
        )

        if watch.turn is None:
            return Answer("decline", why="asked outside a turn: nobody is looking")
        async with one_at_a_time, paused():
            return await ask_elicitation(renderer, question)

    async def approve(request: SamplingRequest) -> bool:
        from sprout_agent.faces.terminal.elicit_form import approve_sampling

        if watch.turn is None:
            return False
        async with one_at_a_time, paused():
            return await approve_sampling(renderer, request)

    return elicit, approve
