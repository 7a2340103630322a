"""The loop over the real server pool, in-process: the built-in servers run inside the test's process (the
same MCP protocol over in-memory streams), so the pool's own behaviour is covered without any subprocess of
the agent or of an MCP server.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sprout_agent.core.events import Event, ToolFinished, ToolRunning
from tests.bounds import bounded
from tests.loop_doubles import build_loop, builtin_pool, call, reply

pytestmark = pytest.mark.anyio


@pytest.mark.e2e
async def test_parallel_calls_through_the_real_pool_overlap_and_answer_in_call_order(tmp_path: Path) -> None:
    # A rendezvous over two FIFOs: opening one blocks until the other side opens it, so each command can
    # only finish while the other is running. Run one at a time, they never finish (fail_after ends that).
    for name in ("to_b", "to_a"):
        os.mkfifo(tmp_path / name)
    script = [
        reply(
            call("dev__bash", "t_a", command="echo from-a > to_b && cat to_a"),
            call("dev__bash", "t_b", command="cat to_b && echo from-b > to_a"),
        ),
        reply("both ran"),
    ]
    events: list[Event] = []
    with anyio.fail_after(bounded(60)):
        async with builtin_pool(tmp_path, events, ("dev",)) as pool:
            loop = build_loop(script, host=pool)
            assert (await loop.turn()).text == "both ran"
    results = loop.results(-2)
    assert list(results) == ["t_a", "t_b"]  # call order, whichever finished first
    assert results["t_a"][1].startswith("from-b") and results["t_b"][1].startswith("from-a")
    # Both went to the server before either came back: the events are in the order they happened.
    marks = [(type(e).__name__, e.call_id) for e in loop.events if isinstance(e, ToolRunning | ToolFinished)]
    assert {m for m in marks[:2]} == {("ToolRunning", "t_a"), ("ToolRunning", "t_b")}
