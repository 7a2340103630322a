"""Parses `--output-format stream-json|json` stdout and validates every line against docs/stream-json.schema.json."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema

from tests.harness import ROOT

SCHEMA_PATH = ROOT / "docs" / "stream-json.schema.json"


@cache
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def valid_lines(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line as a schema-valid object; nothing else may be on stdout."""
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(stdout.splitlines(), 1):
        record = json.loads(raw)  # a non-JSON line fails the test here
        errors = sorted(validator().iter_errors(record), key=str)
        assert not errors, f"line {number} ({record.get('type')}) breaks the schema: {errors[0].message}\n{raw}"
        lines.append(record)
    return lines


def kind(line: dict[str, Any]) -> str:
    """A line's kind: its `subtype` for `system` lines (init, notice, tool_finished, …), else its `type`."""
    return str(line["subtype"]) if line["type"] == "system" else str(line["type"])


def stream(stdout: str) -> list[dict[str, Any]]:
    """A whole stream-json output: `system/init` first (when a session started), one session id, a `result` after
    each answered turn; only `system` lines (a `_SessionEnd` hook's) may follow the last `result`."""
    lines = valid_lines(stdout)
    assert lines, "no output"
    kinds = [line["type"] for line in lines]
    assert "result" in kinds
    last = len(kinds) - 1 - kinds[::-1].index("result")
    assert all(k == "system" for k in kinds[last + 1 :]), kinds[last:]
    if len(lines) > 1:
        assert kind(lines[0]) == "init"
        assert types(lines).count("init") == 1
        assert {line["session_id"] for line in lines} == {lines[0]["session_id"]}
    return lines


def final(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's outcome: the last `result` line."""
    return of_type(lines, "result")[-1]


def types(lines: list[dict[str, Any]]) -> list[str]:
    return [kind(line) for line in lines]


def of_type(lines: list[dict[str, Any]], wanted: str) -> list[dict[str, Any]]:
    return [line for line in lines if kind(line) == wanted]


def texts(lines: list[dict[str, Any]]) -> list[str]:
    """The text of each `assistant` line that has any."""
    found = [
        "".join(b["text"] for b in line["message"]["content"] if b["type"] == "text")
        for line in lines
        if line["type"] == "assistant"
    ]
    return [text for text in found if text]


def tool_results(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each `user` line's tool_result block by its tool_use_id."""
    return {block["tool_use_id"]: block for line in of_type(lines, "user") for block in line["message"]["content"]}


def result_text(block: dict[str, Any]) -> str:
    """A tool_result block's text."""
    return "".join(part.get("text", "") for part in block["content"])
