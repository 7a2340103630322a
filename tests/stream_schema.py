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


def stream(stdout: str) -> list[dict[str, Any]]:
    """A whole stream-json output: `init` first (when a session started), `result` last and once."""
    lines = valid_lines(stdout)
    assert lines, "no output"
    assert lines[-1]["type"] == "result"
    assert [line["type"] for line in lines].count("result") == 1
    if len(lines) > 1:
        assert lines[0]["type"] == "init"
        assert [line["type"] for line in lines].count("init") == 1
        assert {line["session_id"] for line in lines} == {lines[0]["session_id"]}
    return lines


def types(lines: list[dict[str, Any]]) -> list[str]:
    return [line["type"] for line in lines]


def of_type(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] == kind]
