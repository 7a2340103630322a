"""The batch's shared 429 back-off (sprout_agent/model/rate_gate.py) through the real client against the fake API: a 429
closes the gate file for the API's retry-after; a run that finds it closed waits before sending."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from sprout_agent.core.messages import user_text
from sprout_agent.core.protocols import ModelRequest
from sprout_agent.model.rate_gate import MAX_WAIT_SECONDS, RateGate
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, error, reply
from tests.harness import API_KEY
from tests.loop_doubles import MODEL

pytestmark = pytest.mark.anyio
REQUEST = ModelRequest("system", (user_text("hi"),), ())


async def complete(fake: FakeAnthropic, gate: Path) -> str:
    from sprout_agent.model.client import AnthropicModel

    model = AnthropicModel(
        model=MODEL, max_tokens=100, emit=lambda _: None, api_key=API_KEY, base_url=fake.base_url, rate_gate=gate
    )
    try:
        with anyio.fail_after(bounded(20)):
            reply_ = await model.complete(REQUEST, lambda _: None)
    finally:
        await model.aclose()
    return "".join(getattr(block, "text", "") for block in reply_.content)


async def test_a_429_closes_the_gate_for_the_retry_after_of_every_run_sharing_it(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    steps: list[Step] = [error(429, retry_after_ms=300), reply("after the wait")]
    before = time.time()
    with FakeAnthropic(steps) as fake:
        assert await complete(fake, gate) == "after the wait"
    after = time.time()
    closed_until = float(gate.read_text())
    # What the gate holds, read against the clock it is written in: the moment of the 429 plus its retry-after
    # (the 429 came between `before` and `after`). Clock readings in order, not a speed.
    assert before + 0.3 <= closed_until <= after + 0.3


async def test_a_run_that_finds_the_gate_closed_waits_before_sending(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with FakeAnthropic([reply("sent")]) as fake:
        RateGate(gate).close_for(0.5)
        opens = float(gate.read_text())
        assert await complete(fake, gate) == "sent"
    # Not sent before the time the gate holds, on the gate's own (wall) clock: an order, not a speed. A
    # millisecond of room for a clock that NTP slews while the client sleeps on the monotonic one.
    assert fake.requests[0].arrived_at >= opens - 0.001


def test_the_gate_keeps_the_later_time_and_bounds_the_wait(tmp_path: Path) -> None:
    gate = RateGate(tmp_path / "gate")
    assert gate.wait_seconds() == 0.0
    gate.close_for(30)
    gate.close_for(1)
    assert 25 < gate.wait_seconds() <= 30
    (tmp_path / "gate").write_text(str(time.time() + 10_000))
    assert gate.wait_seconds() == MAX_WAIT_SECONDS
    (tmp_path / "gate").write_text("not a time")
    assert gate.wait_seconds() == 0.0
