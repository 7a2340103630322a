"""Spans of the loop, in-process with the OpenTelemetry SDK's in-memory exporter: a tool round, a hook objection, a
hook's timeout and kill, a compaction, a cancelled turn, a subagent; names, parents and attributes; contents only
when asked, and secrets never."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sprout_agent.core.messages import Usage
from sprout_agent.telemetry.otel import OtelTracer
from sprout_agent.trust.secrets import redactor
from tests.bounds import bounded
from tests.loop_doubles import MemoryHost, answers, build_loop, call, default_server, hangs, reply, server
from tests.test_subagents import child_reply, delegating

pytestmark = pytest.mark.anyio
KEY = "sk-ant-api03-secretsecretsecret"


def tracing(*, content: bool = False, environ: dict[str, str] | None = None) -> tuple[OtelTracer, InMemorySpanExporter]:
    """A tracer for the loop (build_loop's `tracer`) and the exporter its finished spans go to."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    redact = redactor({"ANTHROPIC_API_KEY": KEY, **(environ or {})})
    return OtelTracer(provider.get_tracer("test"), otel_context.Context(), content, redact), exporter


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def parent_of(span: ReadableSpan, spans: dict[str, ReadableSpan]) -> str | None:
    ids = {s.context.span_id: name for name, s in spans.items() if s.context is not None}
    return ids.get(span.parent.span_id) if span.parent is not None else None


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_turn_is_a_span_with_its_model_requests_and_tool_calls_as_children() -> None:
    usage = Usage(100, 20, 30, 5)
    tracer, exporter = tracing()
    loop = build_loop(
        [reply(call("fake__echo", "t1", text="hi"), usage=usage), reply("done", usage=usage)], tracer=tracer
    )
    await loop.turn("say hi")
    spans = by_name(exporter)
    turn = spans["invoke_agent sprout-agent"]
    tool = spans["execute_tool fake__echo"]
    assert parent_of(tool, spans) == "invoke_agent sprout-agent"
    assert [parent_of(s, spans) for s in exporter.get_finished_spans() if s.name.startswith("chat ")] == [
        "invoke_agent sprout-agent"
    ] * 2
    expected = {"gen_ai.tool.name": "fake__echo", "gen_ai.tool.call.id": "t1", "sprout.tool.outcome": "ok"}
    assert expected.items() <= attrs(tool).items()
    chat = next(s for s in exporter.get_finished_spans() if s.name.startswith("chat "))
    assert attrs(chat)["gen_ai.usage.input_tokens"] == 100 and attrs(chat)["gen_ai.usage.cache_read.input_tokens"] == 30
    assert attrs(chat)["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert attrs(turn)["sprout.stop_reason"] == "end_turn" and attrs(turn)["gen_ai.usage.output_tokens"] == 40
    assert "sprout.prompt" not in attrs(turn) and "gen_ai.tool.call.arguments" not in attrs(tool)


async def test_contents_are_recorded_only_when_asked_and_a_key_never() -> None:
    tracer, exporter = tracing(content=True)
    loop = build_loop([reply(call("fake__echo", "t1", text=f"my key is {KEY}")), reply("done")], tracer=tracer)
    await loop.turn(f"use {KEY} please")
    spans = by_name(exporter)
    assert attrs(spans["invoke_agent sprout-agent"])["sprout.prompt"] == "use [redacted] please"
    tool = attrs(spans["execute_tool fake__echo"])
    assert KEY not in tool["gen_ai.tool.call.arguments"] and "[redacted]" in tool["sprout.tool.result"]


async def test_a_hook_objection_is_a_span_with_its_decision() -> None:
    host = MemoryHost({"fake": {**default_server(), **server(_Stop=answers("tests are red"))}})
    tracer, exporter = tracing()
    loop = build_loop([reply("done"), reply("really done")], host=host, hook_servers="fake", tracer=tracer)
    await loop.turn()
    hooks = [s for s in exporter.get_finished_spans() if s.name == "hook _Stop"]
    assert [attrs(s)["sprout.hook.decision"] for s in hooks] == ["objection"]
    assert attrs(hooks[0])["sprout.hook.server"] == "fake"


async def test_a_hook_that_times_out_twice_is_a_timeout_then_a_kill() -> None:
    host = MemoryHost({"slow": server(_Stop=hangs())})
    tracer, exporter = tracing()
    loop = build_loop(
        [reply("one"), reply("two")], host=host, hook_servers="slow", hook_timeout_ms=int(bounded(50)), tracer=tracer
    )
    await loop.turn("a")
    await loop.turn("b")
    decisions = [attrs(s)["sprout.hook.decision"] for s in exporter.get_finished_spans() if s.name == "hook _Stop"]
    assert decisions == ["timeout", "killed"]


async def test_a_compaction_is_a_span_with_its_token_counts() -> None:
    tracer, exporter = tracing()
    loop = build_loop([reply("a long answer " * 50), reply("the summary")], tracer=tracer)
    await loop.turn()
    with anyio.fail_after(bounded(10)):
        await loop.agent.compact("manual")
    compaction = by_name(exporter)["compaction"]
    assert attrs(compaction)["sprout.compaction.reason"] == "manual"
    assert attrs(compaction)["sprout.tokens_after"] < attrs(compaction)["sprout.tokens_before"]


async def test_a_cancelled_turn_ends_its_spans_marked_cancelled() -> None:
    host = MemoryHost({"fake": {**default_server(), **server(stuck=hangs())}})
    tracer, exporter = tracing()
    loop = build_loop([reply(call("fake__stuck", "t1"))], host=host, tracer=tracer)
    with anyio.move_on_after(bounded(10)) as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(loop.agent.run_turn, "go")
            await host.started("stuck").wait()
            group.cancel_scope.cancel()
    assert not scope.cancelled_caught
    spans = by_name(exporter)
    assert attrs(spans["invoke_agent sprout-agent"])["sprout.cancelled"] is True
    assert attrs(spans["execute_tool fake__stuck"])["sprout.cancelled"] is True


async def test_a_subagent_is_a_span_holding_the_childs_turn() -> None:
    tracer, exporter = tracing()
    loop, _host = delegating(
        [
            reply(call("agent__task", "toolu_task", description="find", prompt="go", subagent_type="Explore")),
            child_reply("Explore", call("dev__grep", "toolu_c", pattern="x")),
            child_reply("Explore", "found"),
            reply("ok"),
        ],
        tracer=tracer,
    )
    await loop.turn()
    spans = exporter.get_finished_spans()
    names = {s.name for s in spans}
    assert {"invoke_agent Explore", "execute_tool agent__task", "execute_tool dev__grep"} <= names
    child_turn = next(s for s in spans if s.name == "invoke_agent sprout-agent" and attrs(s).get("gen_ai.agent.id"))
    named = {s.context.span_id: s.name for s in spans if s.context is not None}
    assert child_turn.parent is not None and named[child_turn.parent.span_id] == "invoke_agent Explore"
    assert attrs(child_turn)["gen_ai.agent.name"] == "Explore"


async def test_a_password_in_a_url_is_redacted_from_recorded_contents() -> None:
    # The process's own variables are filtered by value, but a URL a tool prints (a config file, a log) is not one.
    url = "postgres://app:hunter2-db-pw@db.example/app"
    tracer, exporter = tracing(content=True)
    loop = build_loop([reply(call("fake__echo", "t1", text=f"DATABASE_URL={url}")), reply("done")], tracer=tracer)
    await loop.turn(f"connect to {url}")
    spans = by_name(exporter)
    tool = attrs(spans["execute_tool fake__echo"])
    recorded = [
        tool["gen_ai.tool.call.arguments"],
        tool["sprout.tool.result"],
        attrs(spans["invoke_agent sprout-agent"])["sprout.prompt"],
    ]
    assert not [text for text in recorded if "hunter2" in text]
    assert "postgres://app:[redacted]@db.example/app" in tool["sprout.tool.result"]


async def test_a_secret_at_the_content_limit_is_redacted_before_the_cut_leaves_a_part_of_it() -> None:
    # Cut first, the end of the text held the secret's first characters, which no longer matched it.
    secret = "plain-secret-" + "q" * 30
    tracer, exporter = tracing(content=True, environ={"DB_PASSWORD": secret})
    loop = build_loop([reply(call("fake__echo", "t1", text="x" * 4080 + secret)), reply("done")], tracer=tracer)
    await loop.turn("x" * 4090 + secret)
    spans = by_name(exporter)
    tool = attrs(spans["execute_tool fake__echo"])
    recorded = [
        tool["gen_ai.tool.call.arguments"],
        tool["sprout.tool.result"],
        attrs(spans["invoke_agent sprout-agent"])["sprout.prompt"],
    ]
    assert [len(text) <= 4096 for text in recorded] == [True] * 3
    assert not [text for text in recorded if "plain-s" in text]


async def test_a_key_on_a_line_of_its_own_in_a_tools_input_is_redacted() -> None:
    # The input is recorded as JSON, where a line break is `\n`: a key after one followed a letter, and the
    # well-known shapes were looked for only at a word's start.
    token = "ghp_" + "R4nd0mT0k3n" * 3
    tracer, exporter = tracing(content=True)
    loop = build_loop([reply(call("fake__echo", "t1", text=f"tokens:\n{token}\n")), reply("done")], tracer=tracer)
    await loop.turn()
    tool = attrs(by_name(exporter)["execute_tool fake__echo"])
    assert token not in tool["gen_ai.tool.call.arguments"] and token not in tool["sprout.tool.result"]


async def test_a_password_with_a_quote_is_redacted_from_a_tools_input_too() -> None:
    # The input is recorded as JSON, where the password's quote and backslash are escaped: the value as the
    # environment holds it was no longer in the text.
    password = 'hunter"2\\db-pw'
    tracer, exporter = tracing(content=True, environ={"PGPASSWORD": password})
    loop = build_loop([reply(call("fake__echo", "t1", text=f"PGPASSWORD={password}")), reply("done")], tracer=tracer)
    await loop.turn()
    tool = attrs(by_name(exporter)["execute_tool fake__echo"])
    assert "hunter" not in tool["gen_ai.tool.call.arguments"] and "hunter" not in tool["sprout.tool.result"]
