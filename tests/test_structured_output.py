"""Structured output (`--json-schema`), in-process: the schema's loading (a bad one is exit 2), the loop's
StructuredOutput call (tools first, validation, retries, the error subtype), the strict form the API's structured
outputs get, and the fake API refusing what the real one refuses. The process and the SDK: test_sdk_e2e.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.options import Options
from sprout_agent.config.output_schema import load_output_schema
from sprout_agent.core.errors import EXIT_RUNTIME, EXIT_USAGE, UsageError, exit_code_for_stop
from sprout_agent.core.events import TurnFinished
from sprout_agent.core.messages import Text, ToolResult, Usage
from sprout_agent.core.structured import MAX_ATTEMPTS, NUDGE, RETRIES_EXHAUSTED, STRUCTURED_OUTPUT_TOOL
from sprout_agent.faces.headless.stream_lines import ResultInfo, result_record
from sprout_agent.model.strict_schema import MAX_OPTIONAL, strict_schema
from tests.api_rules import request_problems
from tests.fake_anthropic import FakeAnthropic, tool_use
from tests.fake_anthropic import reply as api_reply
from tests.fake_sdk import FakeSdk, run_with_sdk
from tests.harness import run_agent
from tests.headless_here import headless
from tests.inproc_fake import fake_in_process
from tests.loop_doubles import MemoryHost, answers, build_loop, call, default_server, reply, server, tool
from tests.stream_schema import valid_lines

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["answer"],
}


def contract(schema: dict[str, Any] = SCHEMA) -> Any:
    return load_output_schema(json.dumps(schema), Path("."))


def structured(id: str, **value: object) -> Any:
    return call(STRUCTURED_OUTPUT_TOOL, id, **value)


def result_of(loop: Any, index: int) -> ToolResult:
    """The tool result answering history[index]'s single call."""
    (block,) = loop.history[index + 1].content
    assert isinstance(block, ToolResult)
    return block


def text_of(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, Text))


# ---------------------------------------------------------------- loading the schema (exit 2)


def test_a_schema_loads_inline_or_from_a_file_and_checks_values(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    for given in (json.dumps(SCHEMA), "s.json"):
        loaded = load_output_schema(given, tmp_path)
        assert loaded.schema == SCHEMA
        assert loaded.check({"answer": 3}) == []
        assert loaded.check({"answer": 0, "tags": [1]}) == [
            "/answer: 0 is less than the minimum of 1",
            "/tags/0: 1 is not of type 'string'",
        ]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("{not json", "not JSON"),
        ('{"type": "array", "items": {}}', 'root must have "type": "object"'),
        ('{"type": "object", "properties": {"a": {"type": "nope"}}}', "not a valid JSON Schema: /properties/a/type"),
        ('{"type": "object", "properties": {"a": {"$ref": "#/$defs/gone"}}}', "points to nothing"),
        ('{"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}', "only references inside"),
        ("missing.json", "cannot read it"),
        ("/dev/zero", "not a schema"),
    ],
)
def test_a_bad_schema_is_a_usage_error_saying_what_is_wrong(given: str, said: str) -> None:
    with pytest.raises(UsageError, match=None) as raised:
        load_output_schema(given, Path("/nonexistent-dir"))
    assert said in str(raised.value) and str(raised.value).startswith("--json-schema")
    assert raised.value.exit_code == EXIT_USAGE


# ---------------------------------------------------------------- the loop


async def test_tool_calls_come_first_then_the_structured_answer_ends_the_turn() -> None:
    """anthropics/claude-code#36033: a run with tool calls before the structured answer must still return it."""
    script = [
        reply("Let me look.", call("fake__echo", "t_echo", text="42")),
        reply(structured("t_out", answer=42, tags=["found"])),
        reply(structured("t_out2", answer=7)),
    ]
    loop = build_loop(script, output=contract())
    result = await loop.turn("what is the answer?")
    assert result.structured == {"answer": 42, "tags": ["found"]}
    assert result.stop_reason == "end_turn" and json.loads(result.text) == result.structured
    assert [c.tool for c in loop.host.calls] == ["echo"]  # StructuredOutput is ours, not a server's
    assert text_of(result_of(loop, 3)) == "Structured output provided successfully"
    offered = loop.model.bodies[0]["tools"]
    assert "fake__echo" in [t["name"] for t in offered]
    (out,) = [t for t in offered if t["name"] == STRUCTURED_OUTPUT_TOOL]
    assert out["input_schema"] == SCHEMA and "strict" not in out  # the model's support is unknown: not strict
    finished = [e for e in loop.events if isinstance(e, TurnFinished)]
    assert finished[-1].structured_output == {"answer": 42, "tags": ["found"]}
    # The next turn goes on from a history the API accepts (ScriptedModel checks every request).
    assert (await loop.turn("again")).structured == {"answer": 7}


async def test_an_invalid_answer_is_told_what_is_wrong_and_the_next_valid_one_is_taken() -> None:
    script = [reply(structured("t_bad", answer="many")), reply(structured("t_good", answer=2))]
    loop = build_loop(script, output=contract())
    result = await loop.turn("go")
    assert result.structured == {"answer": 2}
    refused = result_of(loop, 1)
    assert refused.is_error and text_of(refused) == (
        "Output does not match required schema: /answer: 'many' is not of type 'integer'"
    )


async def test_an_input_that_was_not_a_json_object_is_never_taken_even_by_an_open_schema() -> None:
    script = [reply(structured("t_raw", _invalid="not json")), reply(structured("t_ok", anything="goes"))]
    loop = build_loop(script, output=contract({"type": "object"}))
    assert (await loop.turn("go")).structured == {"anything": "goes"}
    assert result_of(loop, 1).is_error and "not a JSON object" in text_of(result_of(loop, 1))


async def test_a_reply_without_the_call_is_asked_again() -> None:
    script = [reply("The answer is 3."), reply(structured("t_out", answer=3))]
    loop = build_loop(script, output=contract())
    result = await loop.turn("go")
    assert result.structured == {"answer": 3}
    assert loop.history[2].text == NUDGE


async def test_out_of_attempts_the_turn_fails_with_no_value_and_says_why() -> None:
    script = [reply(structured(f"t_{n}", answer=0)) for n in range(MAX_ATTEMPTS)]
    loop = build_loop(script, output=contract())
    result = await loop.turn("go")
    assert result.stop_reason == RETRIES_EXHAUSTED and result.structured is None and result.text == ""
    assert result.error == (
        f"Failed to provide valid structured output after {MAX_ATTEMPTS} attempts — last error: "
        "/answer: 0 is less than the minimum of 1"
    )
    assert exit_code_for_stop(result.stop_reason) == EXIT_RUNTIME
    assert loop.model.remaining == 0  # type: ignore[attr-defined]


async def test_a_stop_hook_objecting_to_the_answer_makes_the_model_give_it_again() -> None:
    script = [reply(structured("t_first", answer=1)), reply(structured("t_second", answer=2))]
    host = MemoryHost({"fake": {**default_server(), **server(_Stop=tool(answers("check the answer again")))}})
    loop = build_loop(script, output=contract(), host=host, hook_servers="fake")
    result = await loop.turn("go")
    assert result.structured == {"answer": 2}
    stop = loop.host.calls_of("_Stop")[0]
    assert stop.hook and loop.history[3].content[-1].name == "fake___Stop"  # type: ignore[union-attr]


# ---------------------------------------------------------------- the API's structured outputs (strict)


async def test_a_model_with_structured_outputs_gets_a_strict_tool_in_the_apis_subset() -> None:
    loop = build_loop([reply(structured("t_out", answer=5))], output=contract(), strict=True)
    assert (await loop.turn("go")).structured == {"answer": 5}
    (out,) = [t for t in loop.model.bodies[0]["tools"] if t["name"] == STRUCTURED_OUTPUT_TOOL]
    assert out["strict"] is True
    assert out["input_schema"] == {
        "type": "object",
        "properties": {
            "answer": {"type": "integer", "description": "{minimum: 1}"},  # left to our own check
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["answer"],
        "additionalProperties": False,
    }


def test_what_the_subset_cannot_hold_is_offered_as_written_without_strict() -> None:
    open_object = {"type": "object", "additionalProperties": {"type": "string"}}
    recursive = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
        },
    }
    tuple_items = {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}]}}}
    many = {"type": "object", "properties": {f"p{n}": {"type": "string"} for n in range(MAX_OPTIONAL + 1)}}
    for schema in (open_object, recursive, tuple_items, many):
        assert strict_schema(schema) is None, schema
    fine = {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "n": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
        },
    }
    assert strict_schema(fine) == {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "additionalProperties": False,
    }


def test_the_fake_api_refuses_strict_schemas_outside_the_subset_and_on_models_without_support() -> None:
    def body(schema: dict[str, Any]) -> dict[str, Any]:
        tool = {"name": "StructuredOutput", "description": "d", "input_schema": schema, "strict": True}
        return {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "tools": [tool]}

    closed = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    assert request_problems(body(closed)) == []
    assert request_problems(body(closed), {"structured_outputs": {"supported": False}}) == [
        "tools: strict tool use (structured outputs) is not supported for this model"
    ]
    assert (
        "additionalProperties must be set to false"
        in request_problems(body({**closed, "additionalProperties": True}))[0]
    )
    bounded = {**closed, "properties": {"a": {"type": "string", "maxLength": 3}}}
    assert request_problems(body(bounded)) == [
        "tools.0.input_schema.properties.a: 'maxLength' is not supported in strict mode"
    ]
    recursive = {
        **closed,
        "properties": {"t": {"$ref": "#/$defs/t"}},
        "$defs": {"t": {"type": "object", "properties": {"k": {"$ref": "#/$defs/t"}}, "additionalProperties": False}},
    }
    assert any("recursive" in p for p in request_problems(body(recursive)))


# ---------------------------------------------------------------- the result line


def test_the_result_carries_structured_output_or_claude_codes_error_subtype() -> None:
    ok = ResultInfo('{"answer": 1}', "end_turn", "s", 2, Usage(), 0.0, 5, 0, [], structured_output={"answer": 1})
    record = result_record(ok)
    assert record["subtype"] == "success" and record["structured_output"] == {"answer": 1}
    failed = ResultInfo("", RETRIES_EXHAUSTED, "s", 5, Usage(), 0.0, 5, EXIT_RUNTIME, ["Failed to provide…"])
    record = result_record(failed)
    assert record["subtype"] == "error_max_structured_output_retries" and record["is_error"] is True
    assert "structured_output" not in record and record["errors"] == ["Failed to provide…"]


# ---------------------------------------------------------------- the headless face (in-process)


@pytest.mark.e2e
def test_text_mode_prints_the_json_answer_after_tool_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """anthropics/claude-code#36033: `claude -p --json-schema` printed nothing; here stdout is the JSON, alone."""
    script = [
        api_reply("Looking.", tool_use("fake__echo", {"text": "12"}, id="t_echo")),
        api_reply("Here it is.", tool_use(STRUCTURED_OUTPUT_TOOL, {"answer": 12}, id="t_out")),
    ]
    with FakeAnthropic(script) as fake:
        options = Options("go", cwd=tmp_path, json_schema=json.dumps(SCHEMA))
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, in_process=[fake_in_process()])
    assert run.code == 0 and json.loads(run.stdout) == {"answer": 12}
    assert run.stdout == '{"answer": 12}\n'


def test_json_output_carries_the_answer_as_structured_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic([api_reply(tool_use(STRUCTURED_OUTPUT_TOOL, {"answer": 4, "tags": []}, id="t"))]) as fake:
        options = Options("go", cwd=tmp_path, output_format="json", json_schema=json.dumps(SCHEMA))
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={})
    (result,) = valid_lines(run.stdout)
    assert run.code == 0 and result["subtype"] == "success" and result["structured_output"] == {"answer": 4, "tags": []}
    assert json.loads(result["result"]) == result["structured_output"]


def test_stream_json_out_of_attempts_is_claude_codes_error_subtype(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic([api_reply("No JSON from me.") for _ in range(MAX_ATTEMPTS)]) as fake:
        options = Options("go", cwd=tmp_path, output_format="stream-json", json_schema=json.dumps(SCHEMA))
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={})
    assert run.code == EXIT_RUNTIME
    result = valid_lines(run.stdout)[-1]
    assert result["subtype"] == "error_max_structured_output_retries" and result["is_error"] is True
    assert "structured_output" not in result and result["result"] == ""
    why = f"Failed to provide valid structured output after {MAX_ATTEMPTS} attempts"
    assert result["errors"] == [f"{why} — last error: the reply ended without a StructuredOutput call"]
    assert run.stderr.strip().splitlines()[-1] == f"sprout-agent: {result['errors'][0]}"
    asked = [m for m in fake.requests[-1].body["messages"] if m["role"] == "user"][1:]
    assert len(asked) == MAX_ATTEMPTS - 1 and NUDGE in json.dumps(asked[0])


@pytest.mark.e2e
def test_a_bad_schema_is_exit_2_with_one_stderr_line_and_a_result_without_a_session(tmp_path: Path) -> None:
    args = ["-p", "hi", "--output-format", "stream-json", "--json-schema", '{"type": "object", "required": 3}']
    run = run_agent(tmp_path, args, fake=None)
    assert run.code == EXIT_USAGE
    (result,) = valid_lines(run.stdout)
    assert result["session_id"] is None and result["exit_code"] == EXIT_USAGE and result["is_error"] is True
    assert run.stderr == f"sprout-agent: {result['errors'][0]}\n"
    assert result["errors"][0].startswith("--json-schema: not a valid JSON Schema: /required: 3 is not of type")


def test_the_typescript_sdks_initialize_may_repeat_the_flags_schema_but_not_bring_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TypeScript SDK passes `outputFormat` as `--json-schema` and again as `initialize.jsonSchema`."""
    answers: list[dict[str, Any]] = []
    other = {"type": "object", "properties": {"x": {"type": "string"}}}

    def script(sdk: FakeSdk) -> None:
        answers.append(sdk.control("a", "initialize", jsonSchema=other))  # refused: not the flag's
        answers.append(sdk.control("b", "initialize", jsonSchema=SCHEMA))
        sdk.user("go")
        sdk.expect(lambda line: line.get("type") == "result")

    with FakeAnthropic([api_reply(tool_use(STRUCTURED_OUTPUT_TOOL, {"answer": 9}, id="t_out"))]) as fake:
        options = Options(None, json_schema=json.dumps(SCHEMA))
        code, sdk, _ = run_with_sdk(tmp_path, monkeypatch, script, fake=fake, options=options)
    assert [a["subtype"] for a in answers] == ["error", "success"] and "--json-schema" in answers[0]["error"]
    assert code == 0
    (result,) = [json.loads(line) for line in sdk.out.raw if json.loads(line).get("type") == "result"]
    assert result["structured_output"] == {"answer": 9}
