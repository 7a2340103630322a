"""Web search and fetch (--web): offered where the model supports them, their calls shown as tool lines, their
result blocks sent back unchanged (the fake checks the encrypted content), their searches billed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.core.events import Event, ModelReplied, Notice, ToolFinished, ToolStarted
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.messages import Message, ServerToolResult, ServerToolUse, Text, Usage, user_text
from sprout_agent.core.protocols import ModelRequest, ToolSpec
from sprout_agent.model.api_messages import to_api_messages
from sprout_agent.model.client import AnthropicModel
from sprout_agent.model.facts import from_info
from sprout_agent.session import store
from tests.api_rules import encrypted, request_problems
from tests.fake_anthropic import FakeAnthropic, model_info, reply, web_fetch, web_search
from tests.loop_doubles import build_loop
from tests.loop_doubles import reply as step

SEARCHER = "claude-searcher-test"
ECHO = ToolSpec("fake__echo", "fake", "echo", "Echo.", {"type": "object"})
pytestmark = pytest.mark.anyio


def searched(query: str = "anyio docs", url: str = "https://anyio.dev/") -> tuple[ServerToolUse, ServerToolResult]:
    use, result = web_search(query, ("AnyIO", url), id="srvtoolu_1")
    raw = json.dumps(result)
    return ServerToolUse(use["id"], use["name"], use["input"]), ServerToolResult("srvtoolu_1", result["type"], raw)


def client(fake: FakeAnthropic, events: list[Event], *, web: bool = True, supported: bool = True) -> AnthropicModel:
    facts = from_info(SEARCHER, model_info(SEARCHER, web_search=supported), "cache")
    return AnthropicModel(
        model=SEARCHER, max_tokens=4000, emit=events.append, api_key="k", base_url=fake.base_url, facts=facts, web=web
    )


# --- on the wire, through the real SDK --------------------------------------------------------------
async def test_a_web_search_turn_streams_tool_lines_and_its_blocks_go_back_unchanged() -> None:
    events: list[Event] = []
    found = web_search("anyio docs", ("AnyIO", "https://anyio.dev/"), ("Trio", "https://trio.dev/"))
    script = [reply(*found, *web_fetch("https://anyio.dev/"), "AnyIO is…", usage={"output_tokens": 9}), reply("ok")]
    with FakeAnthropic(script, models=[model_info(SEARCHER)]) as fake:
        model = client(fake, events)
        first = await model.complete(ModelRequest("sys", [user_text("find it")], (ECHO,)), lambda _t: None)
        history = [user_text("find it"), Message("assistant", first.content), user_text("thanks")]
        await model.complete(ModelRequest("sys", history, (ECHO,)), lambda _t: None)
        await model.aclose()
    assert fake.refused == []
    assert [type(b).__name__ for b in first.content] == [
        "ServerToolUse", "ServerToolResult", "ServerToolUse", "ServerToolResult", "Text",
    ]  # fmt: skip
    assert (first.usage.web_searches, first.usage.web_fetches) == (1, 1)
    tools = [t.get("type") for t in fake.requests[0].body["tools"]]
    assert tools[:2] == ["web_search_20250305", "web_fetch_20250910"]
    sent = fake.requests[1].body["messages"][1]["content"]
    assert sent[1] == found[1]  # every field as the API sent it, encrypted content included
    started = [e for e in events if isinstance(e, ToolStarted)]
    assert [(e.name, e.server, e.arguments) for e in started] == [
        ("web_search", "anthropic", {"query": "anyio docs"}), ("web_fetch", "anthropic", {"url": "https://anyio.dev/"}),
    ]  # fmt: skip
    finished = [e.summary for e in events if isinstance(e, ToolFinished)]
    assert finished == ["2 results: AnyIO; Trio", "fetched https://anyio.dev/"]


async def test_a_model_without_web_search_gets_no_web_tools_and_one_line_saying_so() -> None:
    events: list[Event] = []
    with FakeAnthropic([reply("a"), reply("b")], models=[model_info(SEARCHER, web_search=False)]) as fake:
        model = client(fake, events, supported=False)
        for _ in range(2):
            await model.complete(ModelRequest("sys", [user_text("go")]), lambda _t: None)
        await model.aclose()
    assert all("tools" not in r.body for r in fake.requests)
    assert [e.text for e in events if isinstance(e, Notice)] == [
        "claude-searcher-test does not support web search: --web is off for it"
    ]


async def test_web_is_off_by_default_and_a_fetch_error_is_an_error_line() -> None:
    events: list[Event] = []
    with FakeAnthropic([reply(*web_fetch("https://x.test/", error="url_not_accessible"), "no")]) as fake:
        model = client(fake, events, web=False)
        await model.complete(ModelRequest("sys", [user_text("go")], (ECHO,)), lambda _t: None)
        await model.aclose()
    assert [t["name"] for t in fake.requests[0].body["tools"]] == ["fake__echo"]
    assert [(e.is_error, e.summary) for e in events if isinstance(e, ToolFinished)] == [
        (True, "error: url_not_accessible")
    ]


# --- the fake refuses what the API refuses ------------------------------------------------------------
def test_the_fake_refuses_a_search_without_its_result_an_altered_result_and_an_undefined_tool() -> None:
    use, result = web_search("q", ("T", "https://t.test/"))
    tools = [{"type": "web_search_20250305", "name": "web_search"}]

    def body(*blocks: dict[str, Any], with_tools: bool = True) -> dict[str, Any]:
        messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": list(blocks)}]
        return {"model": "m", "max_tokens": 10, "messages": [*messages, {"role": "user", "content": "more"}]} | (
            {"tools": tools} if with_tools else {}
        )

    assert request_problems(body(use, result, {"type": "text", "text": "a"})) == []
    assert "without a corresponding web_search_tool_result" in str(request_problems(body(use)))
    altered = result | {"content": [dict(result["content"][0], encrypted_content=encrypted("https://evil.test/"))]}
    assert "invalid or modified" in str(request_problems(body(use, altered)))
    assert "a tool this request does not define" in str(request_problems(body(use, result, with_tools=False)))
    caps = model_info("m", web_search=False)["capabilities"]
    assert "not supported for this model" in str(request_problems(body(use, result), caps))


# --- in-process: history, compaction, resume, cost -----------------------------------------------------
async def test_a_web_search_turn_in_the_loop_keeps_valid_history_and_bills_the_search() -> None:
    use, result = searched()
    billed = Usage(100, 20, web_searches=1)
    loop = build_loop([step(use, result, "It is AnyIO.", usage=billed), step("ok")], web=True)
    await loop.turn("find anyio")
    await loop.turn("and then?")
    second = loop.model.bodies[1]
    assert second["messages"][1]["content"][1] == json.loads(result.raw)
    assert loop.ledger.usage.web_searches == 1
    assert loop.of(ModelReplied)[0].cost_usd == pytest.approx((100 * 3 + 20 * 15) / 1e6 + 0.01)
    assert "web searches 1" in loop.ledger.summary()


def test_without_the_web_tools_a_search_goes_back_as_text_and_the_request_stays_valid() -> None:
    use, result = searched()
    history = [user_text("find"), Message("assistant", (use, result, Text("found"))), user_text("summarise")]
    messages = to_api_messages(history, tools_offered=False, web=False)
    assert [b["type"] for b in messages[1]["content"]] == ["text", "text", "text"]
    assert messages[1]["content"][1]["text"] == "[web_search_tool_result: 1 results: AnyIO]"
    assert request_problems({"model": "m", "max_tokens": 10, "messages": messages}) == []


def test_a_search_survives_the_transcript_byte_for_byte(tmp_path: Path) -> None:
    use, result = searched()
    message = Message("assistant", (use, result))
    decoded = store.decode_message(json.loads(json.dumps(store.encode_message(message))))
    assert decoded == message and isinstance(decoded.content[1], ServerToolResult)
    assert decoded.content[1].raw == result.raw


def test_searches_are_priced_per_thousand_on_top_of_tokens() -> None:
    ledger = Ledger("claude-haiku-x")
    assert ledger.add(Usage(web_searches=3)) == pytest.approx(0.03)


async def test_a_paused_turn_is_sent_back_as_it_is_so_the_api_finishes_its_search() -> None:
    use, result = searched()
    loop = build_loop([step(use, result, stop_reason="pause_turn"), step("Found it.")], web=True)
    outcome = await loop.turn("find anyio")
    assert (outcome.stop_reason, outcome.text, outcome.turns) == ("end_turn", "Found it.", 2)
    resent = loop.model.bodies[1]["messages"]
    assert resent[-1]["role"] == "assistant" and resent[-1]["content"][1]["type"] == "web_search_tool_result"


# --- /context: the API's counts ---------------------------------------------------------------------------
async def test_context_counts_come_from_count_tokens_split_into_system_tools_and_messages() -> None:
    with FakeAnthropic() as fake:
        model = client(fake, [], web=False)
        counts = await model.count_tokens(ModelRequest("a system prompt", [user_text("hello there")], (ECHO,)))
        await model.aclose()
    assert fake.refused == [] and len(fake.requests) == 3
    assert all("max_tokens" not in r.body and r.path == "/v1/messages/count_tokens" for r in fake.requests)
    assert counts is not None and all(n > 0 for n in counts)
    bodies = sorted((len(json.dumps(r.body)) for r in fake.requests), reverse=True)
    assert bodies[0] > bodies[1] > bodies[2]  # with system, without it, without the tools too


async def test_context_counts_are_none_when_the_endpoint_is_missing_so_the_estimate_is_shown() -> None:
    with FakeAnthropic() as fake:
        model = client(fake, [], web=False)
        model._client = model._client.with_options(base_url=fake.base_url + "/nowhere")  # pyright: ignore[reportPrivateUsage]
        assert await model.count_tokens(ModelRequest("s", [user_text("hi")])) is None
        await model.aclose()


async def test_the_context_line_shows_the_counted_parts_and_the_estimate_without_a_counter() -> None:
    from sprout_agent.core.status import counted_context_line

    loop = build_loop([])
    assert (await counted_context_line(loop.agent)).startswith("context: ~")

    async def counts(_request: ModelRequest) -> tuple[int, int, int]:
        return 120, 300, 45

    loop.model.count_tokens = counts  # type: ignore[attr-defined]  # a double that can count, as the client can
    line = await counted_context_line(loop.agent)
    assert line.startswith("context: 465 tokens of 200000") and "(system 120, tools 300, messages 45)" in line
