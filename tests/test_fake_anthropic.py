"""The fake Anthropic server speaks the stream the real SDK parses, records requests, and bills caching."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from tests.bounds import bounded
from tests.fake_anthropic import (
    FakeAnthropic,
    cut,
    error,
    hang,
    reply,
    stream_error,
    text,
    tool_use,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

pytestmark = pytest.mark.anyio

USER: list[Any] = [{"role": "user", "content": "hello"}]
TOOLS = [{"name": "x__echo", "description": "echo", "input_schema": {"type": "object"}}]


def client(fake: FakeAnthropic | str, **kw: Any) -> AsyncAnthropic:
    from anthropic import AsyncAnthropic

    url = fake if isinstance(fake, str) else fake.base_url
    return AsyncAnthropic(base_url=url, api_key="test", max_retries=kw.pop("max_retries", 0), **kw)


async def ask(fake: FakeAnthropic | str, messages: list[Any] = USER, **kw: Any) -> tuple[Any, list[str]]:
    """One streamed request; returns the final message and the text deltas seen."""
    deltas: list[str] = []
    with anyio.fail_after(bounded(10)):
        async with (
            client(fake, **kw.pop("client", {})) as api,
            api.messages.stream(model="claude-test", max_tokens=1024, messages=messages, **kw) as stream,
        ):
            async for ev in stream:
                if ev.type == "text":
                    deltas.append(ev.text)
            return await stream.get_final_message(), deltas


async def test_text_reply_is_streamed_in_chunks_and_ends_the_turn() -> None:
    with FakeAnthropic([reply("Hello there, world!")]) as fake:
        msg, deltas = await ask(fake)
    assert len(deltas) == 3 and "".join(deltas) == "Hello there, world!"
    assert msg.stop_reason == "end_turn" and msg.content[0].text == "Hello there, world!"
    assert msg.model == "claude-test"


async def test_tool_use_reply_carries_parsed_input_and_stop_reason() -> None:
    step = reply(text("Let me echo."), tool_use("x__echo", {"text": "hi", "n": [1, 2]}, id="toolu_A"))
    with FakeAnthropic([step, reply(tool_use("x__echo"))]) as fake:
        msg, _ = await ask(fake, tools=TOOLS)
        second, _ = await ask(fake, tools=TOOLS)
    assert msg.stop_reason == "tool_use"
    call = msg.content[1]
    assert (call.type, call.id, call.name, call.input) == (
        "tool_use",
        "toolu_A",
        "x__echo",
        {"text": "hi", "n": [1, 2]},
    )
    assert second.content[0].id.startswith("toolu_fake_") and second.content[0].input == {}


async def test_usage_figures_given_in_the_script_reach_the_final_message() -> None:
    usage = {"input_tokens": 120, "output_tokens": 42, "cache_read_input_tokens": 100}
    with FakeAnthropic([reply("ok", stop_reason="max_tokens", usage=usage)]) as fake:
        msg, _ = await ask(fake)
    u = msg.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_input_tokens) == (120, 42, 100)
    assert u.cache_creation_input_tokens == 0 and msg.stop_reason == "max_tokens"


async def test_error_status_raises_the_sdk_error_and_is_retried_fast() -> None:
    import anthropic

    with FakeAnthropic([error(529), error(429, message="slow down"), error(400)]) as fake:
        with pytest.raises(anthropic.OverloadedError):
            await ask(fake)
        with pytest.raises(anthropic.BadRequestError) as bad:
            await ask(fake, client={"max_retries": 1})
    assert "invalid_request_error" in str(bad.value)
    assert [r.headers["x-stainless-retry-count"] for r in fake.requests] == ["0", "0", "1"]
    with FakeAnthropic([error(529), error(500), reply("finally")]) as fake:
        msg, _ = await ask(fake, client={"max_retries": 2})
    assert msg.content[0].text == "finally"


def test_error_responses_ask_for_an_immediate_retry_by_default() -> None:
    with FakeAnthropic([error(503), error(429, retry_after_ms=None, headers={"x-should-retry": "false"})]) as fake:
        statuses = []
        for _ in range(2):
            req = urllib.request.Request(fake.base_url + "/v1/messages", data=b"{}", method="POST")
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(req, timeout=bounded(5))
            statuses.append((err.value.code, err.value.headers.get("retry-after-ms"), json.load(err.value)))
    assert statuses[0][:2] == (503, "1") and statuses[0][2]["error"]["type"] == "api_error"
    assert statuses[1][:2] == (429, None) and statuses[1][2] == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "fake rate_limit_error"},
    }


async def test_cut_stream_gives_no_stop_reason_and_partial_content() -> None:
    with FakeAnthropic([cut("abcdefghi")]) as fake:
        msg, deltas = await ask(fake)
    assert msg.stop_reason is None and deltas == ["abc"] and msg.content[0].text == "abc"


async def test_mid_stream_error_event_raises_api_status_error() -> None:
    import anthropic

    with (
        FakeAnthropic([stream_error("partial", message="Overloaded now")]) as fake,
        pytest.raises(anthropic.APIStatusError, match="Overloaded now"),
    ):
        await ask(fake)


async def test_requests_are_recorded_with_body_and_headers() -> None:
    with FakeAnthropic([reply("a")]) as fake:
        await ask(fake, system="be brief", tools=TOOLS)
        async with client(fake) as api:
            count = await api.messages.count_tokens(model="claude-test", messages=USER)
        body = json.dumps({"model": "claude-test", "messages": USER}).encode()
        req = urllib.request.Request(
            fake.base_url + "/v1/messages/count_tokens", data=body, headers={"x-api-key": "k2"}
        )
        with urllib.request.urlopen(req, timeout=bounded(5)) as resp:
            raw = json.load(resp)
    first, second, third = fake.requests
    assert first.path == "/v1/messages" and first.headers["authorization"] == "Bearer test"
    assert first.body["system"] == "be brief" and first.body["messages"] == USER
    assert first.body["tools"][0]["name"] == "x__echo" and first.body["stream"] is True
    assert second.path == "/v1/messages/count_tokens" and count.input_tokens > 0
    assert third.headers["x-api-key"] == "k2" and raw == {"input_tokens": len(body) // 4}


async def test_exhausted_script_fails_loudly_without_retries() -> None:
    import anthropic

    with FakeAnthropic([reply("only one")]) as fake:
        await ask(fake)
        with pytest.raises(anthropic.InternalServerError, match="fake script exhausted"):
            await ask(fake, client={"max_retries": 2})
    assert len(fake.requests) == 2  # x-should-retry: false stops the SDK retrying


async def test_callable_step_answers_from_the_request_body() -> None:
    def echo_tool_result(body: dict[str, Any]) -> Any:
        result = body["messages"][-1]["content"][0]
        return reply(f"got {result['tool_use_id']}: {result['content']}")

    turn = [{"type": "tool_result", "tool_use_id": "toolu_Z", "content": "42"}]
    with FakeAnthropic([echo_tool_result]) as fake:
        use = {"type": "tool_use", "id": "toolu_Z", "name": "x__echo", "input": {}}
        messages = [*USER, {"role": "assistant", "content": [use]}, {"role": "user", "content": turn}]
        msg, _ = await ask(fake, messages=messages, tools=TOOLS)
    assert msg.content[0].text == "got toolu_Z: 42" and fake.remaining == 0


async def test_hang_and_delay_hold_the_reply_until_the_client_gives_up() -> None:
    import anthropic

    script = [hang(), reply("late", delay=5), reply("soon", delay=0.05), hang(mid_stream=True)]
    with FakeAnthropic(script) as fake:
        for _ in range(2):
            with pytest.raises(anthropic.APITimeoutError):
                await ask(fake, client={"timeout": 0.3})
        assert (await ask(fake, client={"timeout": 5}))[0].content[0].text == "soon"
        seen: list[str] = []
        async with client(fake) as api:
            stream = await api.messages.create(model="m", max_tokens=10, messages=USER, stream=True)
            events = aiter(stream)
            with anyio.fail_after(bounded(10)):
                seen.append((await anext(events)).type)
            with anyio.move_on_after(0.3) as scope:  # then nothing: the hang, not a bound on the above
                async for ev in events:
                    seen.append(ev.type)
            await stream.close()
    assert scope.cancelled_caught and seen == ["message_start"] and len(fake.requests) == 4


def cached(content: str, mark: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": content}
    return block | {"cache_control": {"type": "ephemeral"}} if mark else block


async def test_auto_usage_reads_the_prefix_cached_by_an_earlier_request() -> None:
    system = [cached("You are a careful agent. " * 40, mark=True)]
    round1 = [{"role": "user", "content": [cached("list the files " * 10, mark=True)]}]
    round2 = [
        {"role": "user", "content": [cached("list the files " * 10, mark=False)]},
        {"role": "assistant", "content": "README.md pyproject.toml " * 5},
        {"role": "user", "content": [cached("now read README.md " * 10, mark=True)]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "uncached tail"},
    ]
    with FakeAnthropic([reply("a"), reply("b"), reply("c")], auto_usage=True) as fake:
        one, _ = await ask(fake, system=system, messages=round1, tools=TOOLS)
        two, _ = await ask(fake, system=system, messages=round2, tools=TOOLS)
        other, _ = await ask(fake, system="a different prompt", messages=USER)
    u1, u2, u3 = one.usage, two.usage, other.usage
    assert u1.cache_read_input_tokens == 0 and u1.cache_creation_input_tokens > 250 and u1.input_tokens == 0
    # the breakpoint moved to a later message; the lookback still finds round 1's cached prefix
    assert u2.cache_read_input_tokens == u1.cache_creation_input_tokens
    assert 0 < u2.cache_creation_input_tokens < u2.cache_read_input_tokens and 0 < u2.input_tokens < 40
    assert (u3.cache_read_input_tokens, u3.cache_creation_input_tokens) == (0, 0) and u3.input_tokens > 0


@pytest.mark.e2e  # the one test here that starts a process (the fake API's own CLI)
async def test_subprocess_mode_serves_a_json_script_and_records_requests(tmp_path: Path) -> None:
    import anthropic

    script = [
        {"error": 529},
        {"text": "calling", "tool_uses": [{"name": "x__echo", "input": {"a": 1}, "id": "toolu_J"}]},
        {"cut": True, "text": "partial text"},
        {"stream_error": "api_error", "message": "boom"},
        {"text": "done", "usage": {"output_tokens": 7}},
    ]
    (tmp_path / "s.json").write_text(json.dumps(script))
    rec, port_file = tmp_path / "r.jsonl", tmp_path / "port.txt"
    argv = [sys.executable, "-m", "tests.fake_anthropic", "--script", str(tmp_path / "s.json")]
    argv += ["--record", str(rec), "--port-file", str(port_file)]
    cwd = Path(__file__).resolve().parent.parent
    async with await anyio.open_process(argv, cwd=cwd) as proc:
        try:
            with anyio.fail_after(bounded(10)):
                assert proc.stdout is not None
                port = int((await proc.stdout.receive()).decode().strip())
            assert port_file.read_text() == str(port)
            fake_url = f"http://127.0.0.1:{port}"
            msg, _ = await ask(fake_url, tools=TOOLS, client={"max_retries": 1})  # the 529 is retried
            assert msg.stop_reason == "tool_use" and msg.content[1].input == {"a": 1}
            cut_msg, _ = await ask(fake_url)
            assert cut_msg.stop_reason is None
            with pytest.raises(anthropic.APIStatusError, match="boom"):
                await ask(fake_url)
            last, _ = await ask(fake_url)
            assert last.content[0].text == "done" and last.usage.output_tokens == 7
        finally:
            proc.terminate()
            with anyio.fail_after(bounded(5)):
                assert await proc.wait() == 0
    lines = [json.loads(line) for line in rec.read_text().splitlines()]
    assert len(lines) == 5 and lines[0]["path"] == "/v1/messages"
    assert lines[0]["headers"]["authorization"] == "Bearer test" and lines[0]["body"]["tools"] == TOOLS
