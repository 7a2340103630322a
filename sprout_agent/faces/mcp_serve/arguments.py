"""The `sprout` and `sprout-reply` tools' arguments: their schemas, their checks, and the narrowing rule. A call may
make a run stricter than `mcp serve` was started with (its `Ceiling`), never looser; the caller has no say over our
environment, keys, provider or config files."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from sprout_agent.config.expansion import os_string_problem
from sprout_agent.config.options import Options, decided_mode
from sprout_agent.config.sandboxing import CHOICES, CONFINING_AS, asked_mode
from sprout_agent.core.limits import Limits
from sprout_agent.core.permission_mode import PermissionMode, parse_mode

MAX_PROMPT_CHARS = 512 * 1024  # what -p takes on stdin (faces/cli/stdin_prompt.py)
MAX_SCHEMA_CHARS = 256 * 1024

_MODES = [mode.value for mode in PermissionMode]
SPROUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "prompt": {"type": "string", "description": "The task, as you would give it to `sprout-agent -p`."},
        "cwd": {"type": "string", "description": "The working directory (default: the server's)."},
        "model": {"type": "string", "description": "The model id (default: the server's)."},
        "permission_mode": {"type": "string", "enum": _MODES, "description": "At most the server's mode."},
        "sandbox": {"type": "string", "enum": list(CHOICES), "description": "At least the server's sandbox."},
        "max_turns": {"type": "integer", "minimum": 1, "description": "Most model requests (at most the server's)."},
        "max_budget_usd": {"type": "number", "minimum": 0, "description": "Spend bound (at most the server's)."},
        "output_schema": {"type": "object", "description": "A JSON Schema (type object) the answer must satisfy."},
    },
    "required": ["prompt"],
    "additionalProperties": False,
}
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string", "description": "The session_id a `sprout` call answered with."},
        "prompt": {"type": "string", "description": "The next message of the conversation."},
    },
    "required": ["session_id", "prompt"],
    "additionalProperties": False,
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "result": {"type": "string", "description": "The final answer's text."},
        "session_id": {"type": "string", "description": "Give it to `sprout-reply` to go on."},
        "stop_reason": {"type": "string"},
        "is_error": {"type": "boolean"},
        "cost_usd": {"type": "number", "description": "What this call spent (its bound: max_budget_usd)."},
        "session_cost_usd": {"type": "number", "description": "What the session has spent, this call included."},
        "files_changed": {"type": "array", "items": {"type": "object"}},
        "structured_output": {"type": "object", "description": "With output_schema: the valid answer."},
        "notices": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["result", "session_id", "stop_reason", "is_error", "cost_usd", "files_changed"],
}


class BadArguments(ValueError):
    """A call's arguments cannot run: the tool answers with this text as its error."""


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The widest run a call may ask for: what `mcp serve` was started with, under its own environment."""

    mode: PermissionMode
    sandbox: str
    limits: Limits

    @classmethod
    def of(cls, template: Options, environ: Mapping[str, str]) -> Ceiling:
        return cls(decided_mode(template, environ), asked_mode(template.sandbox, environ), template.limits)


def sprout_options(arguments: Mapping[str, object], template: Options, ceiling: Ceiling) -> Options:
    """The run's options: the server's, with the call's narrowing on top; BadArguments for anything else."""
    _only(arguments, SPROUT_SCHEMA)
    prompt = prompt_of(arguments)
    cwd = _cwd(arguments.get("cwd"), template.cwd)
    mode, sandbox = _mode(arguments.get("permission_mode"), ceiling), _sandbox(arguments.get("sandbox"), ceiling)
    limits = replace(
        template.limits,
        max_requests=_bound("max_turns", arguments.get("max_turns"), ceiling.limits.max_requests, integer=True),
        max_budget_usd=_bound("max_budget_usd", arguments.get("max_budget_usd"), ceiling.limits.max_budget_usd),
    )
    return replace(
        template,
        prompt=prompt,
        cwd=cwd,
        model=_text("model", arguments.get("model")) or template.model,
        permission_mode=mode or template.permission_mode,
        sandbox=sandbox or template.sandbox,
        limits=limits,
        json_schema=_schema(arguments.get("output_schema")),
    )


def reply_arguments(arguments: Mapping[str, object]) -> tuple[str, str]:
    """(session id, prompt) of a `sprout-reply` call."""
    _only(arguments, REPLY_SCHEMA)
    session_id = arguments.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise BadArguments("session_id: give the session_id a `sprout` call answered with")
    return session_id, prompt_of(arguments)


def prompt_of(arguments: Mapping[str, object]) -> str:
    prompt = arguments.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise BadArguments("prompt: a non-empty string is required")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise BadArguments(f"prompt: over {MAX_PROMPT_CHARS} characters, more than a prompt can carry")
    return _text("prompt", prompt) or prompt


def _only(arguments: Mapping[str, object], schema: Mapping[str, Any]) -> None:
    known = cast(dict[str, object], schema["properties"])
    if unknown := sorted(name for name in arguments if name not in known):
        raise BadArguments(f"unknown argument(s): {', '.join(unknown)} (known: {', '.join(known)})")


def _text(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadArguments(f"{name}: must be a string")
    if (problem := os_string_problem(value)) is not None:
        raise BadArguments(f"{name} {problem}")
    return value


def _cwd(value: object, default: Path) -> Path:
    given = _text("cwd", value)
    if given is None:
        return default
    path = (default / given).resolve()
    if not path.is_dir():
        raise BadArguments(f"cwd: {path} is not a directory")
    return path


def _mode(value: object, ceiling: Ceiling) -> PermissionMode | None:
    if value is None:
        return None
    try:
        mode = parse_mode(value)
    except ValueError as error:
        raise BadArguments(f"permission_mode: {error}") from None
    if not mode.within(ceiling.mode):
        raise BadArguments(
            f"permission_mode {mode} is wider than this server's {ceiling.mode}: a call may only narrow it "
            "(start `sprout-agent mcp serve --permission-mode ...` wider to allow it)"
        )
    return mode


def _sandbox(value: object, ceiling: Ceiling) -> str | None:
    if value is None:
        return None
    if value not in CHOICES:
        raise BadArguments(f"sandbox: one of {', '.join(CHOICES)}")
    assert isinstance(value, str)
    if value not in CONFINING_AS[ceiling.sandbox]:
        allowed = ", ".join(sorted(CONFINING_AS[ceiling.sandbox]))
        raise BadArguments(f"sandbox {value} is looser than this server's {ceiling.sandbox}: a call may ask {allowed}")
    return value


def _bound(name: str, value: object, ceiling: float | None, *, integer: bool = False) -> Any:
    """A call's bound, at most the server's; the server's when the call gives none."""
    if value is None:
        return ceiling
    if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
        raise BadArguments(f"{name}: must be {'an integer' if integer else 'a number'}")
    if not math.isfinite(value) or value < (1 if integer else 0):
        raise BadArguments(f"{name}: must be at least {1 if integer else 0}")
    if ceiling is not None and value > ceiling:
        raise BadArguments(f"{name} {value} is over this server's {ceiling}: a call may only lower it")
    return value


def _schema(value: object) -> str | None:
    """The output schema as --json-schema's inline JSON (its checks run when the run is prepared)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadArguments("output_schema: must be a JSON Schema object")
    text = json.dumps(value)
    if len(text) > MAX_SCHEMA_CHARS:
        raise BadArguments(f"output_schema: over {MAX_SCHEMA_CHARS} characters")
    return text
