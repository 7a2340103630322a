"""The loop over the real wire, in-process: the real `AnthropicModel` (SDK, streaming, our retries) against the
fake Anthropic HTTP server on 127.0.0.1, with the in-memory tool host. No subprocess: the SDK is imported once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from sprout_agent.core.compaction import SUMMARY_SYSTEM
from sprout_agent.core.errors import ApiError, PromptTooLongError
from sprout_agent.core.events import ApiRetry, Event
from sprout_agent.core.messages import Message, ToolUse, user_text
from sprout_agent.core.protocols import ModelRequest, ToolSpec
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, cut, error, reply, stream_error, tool_use
from tests.harness import API_KEY
from tests.loop_doubles import MODEL, Loop, MemoryHost, build_loop, image, server

if TYPE_CHECKING:
    from sprout_agent.model.client import AnthropicModel

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def over_the_wire(fake: FakeAnthropic, host: MemoryHost | None = None, **options: Any) -> AsyncIterator[Loop]:
    """build_loop with the scripted model swapped for the real client pointed at `fake`."""
    loop = build_loop([], host=host, **options)
    async with real_model(fake, loop.events) as model:
        loop.agent.model = model
        loop.compactor.model = model
        yield loop


@asynccontextmanager
async def real_model(fake: FakeAnthropic, events: list[Event]) -> AsyncIterator[AnthropicModel]:
    from sprout_agent.model.client import AnthropicModel

    model = AnthropicModel(model=MODEL, max_tokens=32_000, emit=events.append, api_key=API_KEY, base_url=fake.base_url)
    try:
        yield model
    finally:
        # AnthropicModel has no close(); left open, the SDK's finalizer closes the client later on whatever
        # event loop is running then (another test's), which fails that test with "Event loop is closed".
        await model.aclose()


def serve(*steps: Step) -> FakeAnthropic:
    return FakeAnthropic(list(steps))


async def test_cache_breakpoints_sit_on_tools_system_and_the_newest_turn_and_the_prefix_is_byte_stable() -> None:
    script = [reply(tool_use("fake__echo", {"text": str(i)})) for i in range(3)] + [reply("done")]
    with serve(*script) as fake:
        async with over_the_wire(fake) as loop:
            assert (await loop.turn()).text == "done"
    bodies = [r.body for r in fake.requests]
    assert len(bodies) == 4
    for body in bodies:
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert len({json.dumps([b["tools"], b["system"]]) for b in bodies}) == 1
    assert fake.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


async def test_an_overloaded_api_is_retried_with_events_then_succeeds() -> None:
    with serve(error(529), error(500), reply("third time")) as fake:
        async with over_the_wire(fake) as loop:
            assert (await loop.turn()).text == "third time"
    assert len(fake.requests) == 3
    assert [e.attempt for e in loop.of(ApiRetry)] == [1, 2]
    # Read as the final error reads, never as a Python repr of the SDK's exception.
    assert [e.reason for e in loop.of(ApiRetry)] == ["529 (overloaded)", "500 (internal server error)"]


async def test_a_cut_or_errored_stream_is_never_taken_as_an_answer() -> None:
    with serve(cut("partial ans"), stream_error("x"), reply("whole answer")) as fake:
        async with over_the_wire(fake) as loop:
            assert (await loop.turn()).text == "whole answer"
    assert len(fake.requests) == 3
    assert [m.text for m in loop.history if m.role == "assistant"] == ["whole answer"]


async def test_a_final_api_failure_is_one_api_error_naming_the_status() -> None:
    with serve(error(400, message="bad thing")) as fake:
        async with over_the_wire(fake) as loop:
            with pytest.raises(ApiError) as raised:
                await loop.turn()
    assert str(raised.value).startswith("API request failed: 400") and "bad thing" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert len(fake.requests) == 1  # a 400 is not retried


async def test_prompt_too_long_from_the_api_compacts_and_retries_once() -> None:
    too_long = error(400, message="prompt is too long: 250000 tokens > 200000 maximum", retry_after_ms=None)
    with serve(too_long, reply("summary"), reply("recovered")) as fake:
        async with over_the_wire(fake) as loop:
            assert (await loop.turn()).text == "recovered"
    summary = fake.requests[1].body
    assert "tools" not in summary and summary["system"][0]["text"] == SUMMARY_SYSTEM
    assert summary["max_tokens"] == 8_192
    assert "[Context handoff" in fake.requests[2].body["messages"][0]["content"][0]["text"]


async def test_a_tool_result_image_goes_over_the_wire_as_an_image_block() -> None:
    host = MemoryHost({"fake": server(shot=image("image/png"))})
    with serve(reply(tool_use("fake__shot", id="t_img")), reply("I see a pixel")) as fake:
        async with over_the_wire(fake, host=host) as loop:
            assert (await loop.turn()).text == "I see a pixel"
    (result,) = [b for m in fake.requests[1].body["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert result["content"][0]["source"]["media_type"] == "image/png"


async def test_the_fake_api_refuses_a_history_the_real_one_would_refuse_without_using_its_script() -> None:
    events: list[Event] = []
    unanswered: Sequence[Message] = (user_text("go"), Message("assistant", (ToolUse("t1", "fake__echo", {}),)))
    spec = ToolSpec("fake__echo", "fake", "echo", "echo", {"type": "object"})
    with serve(reply("never sent")) as fake:
        async with real_model(fake, events) as model:
            with pytest.raises(ApiError, match="invalid_request_error") as raised, anyio.fail_after(bounded(10)):
                await model.complete(ModelRequest("system", unanswered, (spec,)), lambda _: None)
        assert fake.remaining == 1
    assert not isinstance(raised.value, PromptTooLongError)
    assert "tool_use ids ['t1'] are never answered" in str(raised.value)
    assert len(fake.refused) == 1 and "never answered" in fake.refused[0][0]


@pytest.mark.parametrize("raw_input", ["a string", None, {"text": "\ud800"}], ids=["string", "null", "surrogate"])
async def test_a_tool_input_the_sdk_cannot_parse_is_an_error_result_not_an_internal_error(raw_input: object) -> None:
    bad = tool_use("fake__echo", id="t_bad")
    bad["input"] = raw_input  # streamed as input_json_delta chunks, as the API would
    with serve(reply("Calling.", bad), reply("recovered")) as fake:
        async with over_the_wire(fake) as loop:
            assert (await loop.turn()).text == "recovered"
    ((is_error, text),) = loop.results(-2).values()
    assert is_error and text.startswith("tool input must be a JSON object")
    assert loop.host.calls == []  # never run
    sent = fake.requests[1].body["messages"][1]["content"]  # the history went back valid: the fake checks it
    assert sent[0] == {"type": "text", "text": "Calling."} and isinstance(sent[1]["input"], dict)
