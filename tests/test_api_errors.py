"""API failures in words a person can act on, through the real SDK against the fake API returning each status."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import anyio
import pytest

from sprout_agent.core.errors import ApiError
from sprout_agent.core.events import Event
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.messages import user_text
from sprout_agent.core.protocols import ModelRequest
from sprout_agent.model.api_errors import Failure, explain
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, error, hang, reply
from tests.harness import API_KEY
from tests.loop_doubles import MODEL

pytestmark = pytest.mark.anyio
REQUEST = ModelRequest("system", (user_text("hi"),), ())


async def failure_text(steps: Sequence[Step], base_url: str | None = None, ledger: Ledger | None = None) -> str:
    """What the user reads when the real client gives up (one retry allowed, to count attempts)."""
    from sprout_agent.model.client import AnthropicModel

    events: list[Event] = []
    with FakeAnthropic(list(steps)) as fake:
        model = AnthropicModel(
            model=MODEL,
            max_tokens=100,
            emit=events.append,
            api_key=API_KEY,
            base_url=base_url or fake.base_url,
            retries=1,
            on_attempt=ledger.attempted if ledger is not None else None,
        )
        try:
            with pytest.raises(ApiError) as raised, anyio.fail_after(bounded(20)):
                await model.complete(REQUEST, lambda _: None)
        finally:
            await model.aclose()
    return str(raised.value)


@pytest.mark.parametrize(
    ("status", "words", "attempts"),
    [
        (401, "401: the API key was rejected; check ANTHROPIC_API_KEY", "1 attempt "),
        (403, "403: the API key may not use this model or endpoint", "1 attempt "),
        (404, f"404: model {MODEL} not found; check --model / ANTHROPIC_MODEL or ANTHROPIC_BASE_URL", "1 attempt "),
        (429, "429: rate limited; wait a moment and try again", "2 attempts "),
        (529, "529: the API is overloaded; try again in a few minutes", "2 attempts "),
        (500, "500: the API had an internal error; try again shortly", "2 attempts "),
    ],
)
async def test_each_api_status_is_said_in_words_with_the_attempts_made_and_the_base_url(
    status: int, words: str, attempts: str
) -> None:
    text = await failure_text([error(status, message="server detail"), error(status, message="server detail")])
    assert text.startswith(f"API request failed: {words}"), text
    assert "(the API said: server detail)" in text
    assert f"[{attempts}to http://127.0.0.1:" in text


async def test_a_refused_connection_names_the_url_and_counts_the_attempts_sent() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ledger = Ledger(MODEL)
    text = await failure_text([], base_url=f"http://127.0.0.1:{port}", ledger=ledger)
    assert text.startswith("API request failed: could not reach the API; check the network and ANTHROPIC_BASE_URL")
    assert text.endswith(f"[2 attempts to http://127.0.0.1:{port}]")
    assert ledger.sent == 2 and ledger.summary().startswith("2 requests;")  # sent, though none answered


def test_the_default_endpoint_is_not_named() -> None:
    failure = Failure(401, "authentication_error", "invalid x-api-key", 1, MODEL, "https://api.anthropic.com/")
    assert explain(failure).endswith("(the API said: invalid x-api-key) [1 attempt]")


async def test_an_answered_request_counts_once_in_the_summary() -> None:
    from sprout_agent.model.client import AnthropicModel

    ledger = Ledger(MODEL)
    with FakeAnthropic([error(529), reply("ok")]) as fake:
        model = AnthropicModel(
            model=MODEL, max_tokens=100, emit=lambda _: None, api_key=API_KEY, base_url=fake.base_url,
            on_attempt=ledger.attempted,
        )  # fmt: skip
        try:
            ledger.add((await model.complete(REQUEST, lambda _: None)).usage)
        finally:
            await model.aclose()
    assert (ledger.sent, ledger.requests) == (2, 1)
    assert ledger.summary().startswith("2 requests;")


async def test_a_request_that_stays_quiet_says_so_and_a_stream_that_moves_on_starts_the_count_again() -> None:
    """Issue 45: with the API hanging, a run said nothing for ten minutes. The real client against a reply that
    comes late: a notice each `waiting_notice` of quiet, the first of a spell marked as such."""
    from sprout_agent.core.events import ApiWaiting
    from sprout_agent.model.client import AnthropicModel

    events: list[Event] = []
    with FakeAnthropic([reply("late", delay=1.0)]) as fake:
        model = AnthropicModel(
            model=MODEL, max_tokens=100, emit=events.append, api_key=API_KEY, base_url=fake.base_url,
            waiting_notice=0.3,
        )  # fmt: skip
        try:
            with anyio.fail_after(bounded(20)):
                answer = await model.complete(REQUEST, lambda _: None)
        finally:
            await model.aclose()
    assert answer.stop_reason == "end_turn"
    waits = [event for event in events if isinstance(event, ApiWaiting)]
    assert waits and waits[0].first and not any(w.first for w in waits[1:])
    assert [w.seconds for w in waits] == sorted(w.seconds for w in waits)


async def test_api_timeout_bounds_a_quiet_request_and_its_end_is_one_line() -> None:
    """`API_TIMEOUT_MS` (the client's `timeout`): a hanging API fails as a timeout, retried, then one line."""
    from sprout_agent.model.client import AnthropicModel

    with FakeAnthropic([hang(), hang()]) as fake:
        model = AnthropicModel(
            model=MODEL, max_tokens=100, emit=lambda _: None, api_key=API_KEY, base_url=fake.base_url,
            retries=1, timeout=0.5,
        )  # fmt: skip
        try:
            with pytest.raises(ApiError) as raised, anyio.fail_after(bounded(20)):
                await model.complete(REQUEST, lambda _: None)
        finally:
            await model.aclose()
    text = str(raised.value)
    assert "timed out" in text or "timeout" in text, text
    assert "\n" not in text and "2 attempts" in text
