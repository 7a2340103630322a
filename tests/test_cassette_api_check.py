"""A replay is a fake API too (docs/cassettes.md, "The API's rules"): the player runs every request it serves through
the Messages API's rules (sprout_agent/model/cassettes/api_check.py), the ones the tests' fake API applies, so a
replay cannot succeed on a request the real API would refuse. In-process: the player answering request bodies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sprout_agent.core.errors import ReplayDiverged
from sprout_agent.model.cassettes.api_check import answer_blocks, messages_request
from sprout_agent.model.cassettes.format import Cassette, Exchange
from tests.fake_anthropic import text, thinking, tool_use, web_search
from tests.fake_anthropic_wire import message_events

Json = dict[str, Any]
MODEL = "claude-sonnet-4-5"
TOOLS = [{"name": "dev__read", "description": "read", "input_schema": {"type": "object"}}]


def streamed(*blocks: Json) -> Json:
    """A recorded answer: the fake API's stream of `blocks`, as a cassette holds it."""
    events = message_events(list(blocks), None, MODEL, 1, {"input_tokens": 5, "output_tokens": 5})
    headers = {"content-type": "text/event-stream"}
    return {"status": 200, "headers": headers, "events": [{"event": n, "data": d} for n, d in events]}


def post(messages: list[Json], path: str = "/v1/messages?beta=true", **body: Any) -> Json:
    sent = {"model": MODEL, "max_tokens": 4096, "stream": True, "tools": TOOLS, "messages": messages, **body}
    return {"method": "POST", "path": path, "headers": {}, "body": sent}


def player(*exchanges: tuple[Json, Json], lenient: bool = False, facts: Json | None = None) -> tuple[Any, list[str]]:
    """The player for a cassette of `exchanges` (its module loads the SDK: imported here, not at collection);
    `facts`: the header's model facts, as a recording writes them (ModelFacts, sets as lists)."""
    from sprout_agent.model.cassettes.player import Player

    recorded = tuple(Exchange(n, request, response, 2 * n) for n, (request, response) in enumerate(exchanges, 1))
    warnings: list[str] = []
    header: Json = {"cwd": "/work"} | ({"model": MODEL, "facts": facts} if facts is not None else {})
    cassette = Cassette(Path("c.jsonl"), header, recorded)
    return Player(cassette, lenient=lenient, cwd="/work", redact=str, warn=warnings.append), warnings


ASK = {"role": "user", "content": "read a.txt"}


def test_a_lenient_replay_answers_a_changed_request_by_position_but_not_one_the_api_would_refuse() -> None:
    play, warnings = player((post([ASK]), streamed(text("hi"))), (post([ASK]), streamed(text("hi"))), lenient=True)
    play.answer(post([{"role": "user", "content": "read b.txt"}]))  # differs: answered by position, one warning
    assert len(warnings) == 1
    with pytest.raises(ReplayDiverged) as refused:
        play.answer(post([{"role": "user", "content": "  "}]))
    assert str(refused.value) == (
        "replay: request 2 (exchange 2, line 4) is one the API would refuse: messages.0: content must be non-empty "
        "(and 1 more)"
    )


def test_a_strict_replay_refuses_a_request_whose_only_difference_is_one_strict_matching_puts_aside() -> None:
    """Cache markers are volatile for matching, but the API takes at most four."""
    marked = [{"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]
    play, _ = player((post([{"role": "user", "content": [{"type": "text", "text": f"part {i}"} for i in range(5)]}]),
                      streamed(text("hi"))))  # fmt: skip
    with pytest.raises(ReplayDiverged, match=r"cache_control: 5 breakpoints, at most 4 are allowed$"):
        play.answer(post([{"role": "user", "content": marked}]))


def test_a_recorded_error_answer_is_served_as_the_api_gave_it_without_the_check() -> None:
    overloaded = {"status": 529, "headers": {}, "body": {"type": "error", "error": {"type": "overloaded_error"}}}
    play, _ = player((post([]), overloaded))
    assert play.answer(post([])).response["status"] == 529  # the API sheds load before it reads the request


def test_a_thinking_signature_the_cassette_issued_comes_back_and_an_edited_thinking_text_is_refused() -> None:
    """A hand-edited cassette whose recorded request is fine: the reply's thinking edited, its signature no longer
    holds for the text the agent sends back."""
    first = post([ASK], thinking={"type": "enabled", "budget_tokens": 2048})
    answer = streamed(thinking("the file is small"), tool_use("dev__read", {"file_path": "a.txt"}, id="toolu_1"))
    blocks = answer_blocks(answer)
    back = [ASK, {"role": "assistant", "content": blocks}, _result("toolu_1")]
    play, _ = player((first, answer), (post(back, thinking=first["body"]["thinking"]), streamed(text("done"))))
    play.answer(first)
    play.answer(post(back, thinking=first["body"]["thinking"]))

    edited = [{**blocks[0], "thinking": "the file is large"}, blocks[1]]
    again, _ = player((first, answer), (post(back, thinking=first["body"]["thinking"]), streamed(text("done"))),
                      lenient=True)  # fmt: skip
    again.answer(first)
    with pytest.raises(ReplayDiverged, match=r": messages\.1\.content\.0: Invalid `signature` in `thinking` block$"):
        again.answer(post([ASK, {"role": "assistant", "content": edited}, _result("toolu_1")]))


def test_opaque_values_a_request_the_api_accepted_carried_are_taken_as_the_apis() -> None:
    """A resumed session's cassette holds requests whose history came from an earlier recording: the API took them."""
    use, found = web_search("news", ("A", "https://a.example"))
    history = [
        ASK,
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "opaque.mac"}, use, found, text("ok")]},
        {"role": "user", "content": "more"},
    ]
    search = [{"type": "web_search_20250305", "name": "web_search"}]
    play, _ = player((post(history, tools=search), streamed(text("more."))))
    play.answer(post(history, tools=search))
    forged = [dict(b) for b in history[1]["content"]]
    forged[0]["data"] = "opaque.forged"
    with pytest.raises(ReplayDiverged, match=r"Invalid `data` in `redacted_thinking` block$"):
        player((post(history, tools=search), streamed(text("more."))), lenient=True)[0].answer(
            post([ASK, {"role": "assistant", "content": forged}, history[2]], tools=search)
        )


def test_each_providers_wire_is_checked_as_the_messages_request_it_stands_for() -> None:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10, "messages": [ASK]}
    bedrock = messages_request("/model/us.anthropic.claude-sonnet-4-5-v1%3A0/invoke-with-response-stream", body)
    wanted = {"model": "us.anthropic.claude-sonnet-4-5-v1:0", "max_tokens": 10, "messages": [ASK], "stream": True}
    assert bedrock == ("/v1/messages", wanted)
    vertex = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    assert messages_request(vertex, body) == (
        "/v1/messages", {"model": "claude-sonnet-4-5@20250929", "max_tokens": 10, "messages": [ASK]}
    )  # fmt: skip
    assert messages_request("/anthropic/v1/messages?beta=true", body) == ("/v1/messages", body)  # Foundry, a gateway
    assert messages_request("/v1/messages/count_tokens?beta=true", body) == ("/v1/messages/count_tokens", body)
    assert messages_request("/v1/models/claude-sonnet-4-5", None) is None  # not the Messages API: not checked

    counted = {"method": "POST", "path": "/v1/messages/count_tokens", "headers": {}, "body": {"model": MODEL}}
    play, _ = player((counted, {"status": 200, "headers": {}, "body": {"input_tokens": 3}}))
    with pytest.raises(ReplayDiverged, match=r"messages: a non-empty list is required$"):
        play.answer(counted)


def _result(call_id: str) -> Json:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "small"}]}


FACTS: Json = {
    "model": MODEL, "window": 200000, "max_output": 64000, "thinking_types": ["enabled"], "effort_levels": [],
    "source": "Models API", "image_input": True, "pdf_input": True, "web_search": None, "structured_outputs": False,
}  # fmt: skip


def test_the_sessions_model_is_held_to_the_capabilities_its_recorded_facts_name_and_an_unknown_one_to_none() -> None:
    """The header's facts said: thinking `enabled` only, no effort parameter, no strict schemas; web search unknown.
    A request that sends what the model was known not to take is refused as the API refuses it; what the facts left
    unknown is not; a subagent's request on another model is not held to this model's facts."""
    effort = post([ASK], output_config={"effort": "high"})
    adaptive = post([ASK], thinking={"type": "adaptive"})
    fine = post([ASK], thinking={"type": "enabled", "budget_tokens": 2048})
    other = {**effort, "body": {**effort["body"], "model": "claude-haiku-4-5"}}
    answer = streamed(text("hi"))
    play, _ = player((fine, answer), (other, answer), facts=FACTS)
    play.answer(fine)
    play.answer(other)
    for request, problem in (
        (effort, "output_config.effort: 'high' is not supported for this model"),
        (adaptive, "thinking.type.adaptive is not supported for this model"),
    ):
        play, _ = player((request, answer), facts=FACTS)
        with pytest.raises(ReplayDiverged) as refused:
            play.answer(request)
        assert str(refused.value).endswith(problem)
    unknown = {key: None for key in ("thinking_types", "effort_levels", "structured_outputs")}
    play, _ = player((effort, answer), (adaptive, answer), facts=FACTS | unknown)
    play.answer(effort)
    play.answer(adaptive)
