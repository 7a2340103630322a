"""The scripted model scripts/sdk_examples serves: rules keyed by the prompt, answered by tests/fake_anthropic.py.

A rule names a pattern found in the latest user prompt (case-insensitive) and what the model does for it: the tool calls
it makes one per turn (each under the first of its names that the request offers, skipped when none is: a tool
the agent does not offer is a tool the model cannot call), then a text that quotes the tool results, so an
example's output shows them. Keyed by the prompt, not by the order of requests, one scenario serves an example
whose sub-examples run in any order, and a run that sends fewer or more requests than expected still gets
sensible answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.fake_anthropic import Step, error, reply, thinking, tool_use

Json = dict[str, Any]


@dataclass(frozen=True)
class Call:
    names: tuple[str, ...]  # Claude Code's name first, then the agent's own spellings
    input: Json


@dataclass(frozen=True)
class Rule:
    prompt: str  # a regular expression searched in the latest user prompt (case-insensitive)
    calls: tuple[Call, ...] = ()
    text: str = "Done."
    thinking: str | None = None  # a thinking block before the text (the fake signs it)
    error: int | None = None  # answer this HTTP status instead (e.g. 404 for an unknown model)
    model: str | None = None  # only when the request names this model


def bash(command: str) -> Call:
    return Call(("Bash", "mcp__dev__bash", "dev__bash"), {"command": command})


def write(path: str, content: str) -> Call:
    return Call(("Write", "mcp__dev__write", "dev__write"), {"file_path": path, "content": content})


def read(path: str) -> Call:
    return Call(("Read", "mcp__dev__read", "dev__read"), {"file_path": path})


def glob(pattern: str) -> Call:
    return Call(("Glob", "mcp__dev__glob", "dev__glob"), {"pattern": pattern})


def mcp(tool: str, **input: Any) -> Call:
    """A call to an MCP tool by the SDK's name for it (`mcp__calc__add`); the model may see it as `calc__add`."""
    return Call((tool, tool.removeprefix("mcp__")), input)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    found: list[str] = []
    for block in content:
        if isinstance(block, dict):
            if block.get("type") == "text":
                found.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                found.extend(_texts(block.get("content")))
    return found


def _is_tool_result(message: Json) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


class Model:
    """A fake-API step (`body -> step`) answering every request by the rules; the first matching rule wins."""

    def __init__(self, rules: tuple[Rule, ...], default: str = "4") -> None:
        self.rules = rules
        self.default = default

    def __call__(self, body: Json) -> Step:
        messages: list[Json] = body.get("messages", [])
        start = max(
            (i for i, m in enumerate(messages) if m.get("role") == "user" and not _is_tool_result(m)), default=0
        )
        prompt = " ".join(_texts(messages[start].get("content"))) if messages else ""
        found = next(((r, m) for r in self.rules if (m := self._match(r, prompt, body))), None)
        if found is None:
            return reply(self.default)
        rule, match = found
        if rule.error is not None:
            return error(rule.error, message=f"model: {body.get('model')}", retry_after_ms=None)
        offered = {str(t.get("name")) for t in body.get("tools", []) if isinstance(t, dict)}
        calls = [
            (name, _filled(c.input, match))
            for c in rule.calls
            if (name := next((n for n in c.names if n in offered), None))
        ]
        done = sum(1 for m in messages[start + 1 :] if m.get("role") == "assistant")
        if done < len(calls):
            name, input = calls[done]
            return reply(tool_use(name, input))
        results = [t for m in messages[start + 1 :] if _is_tool_result(m) for t in _texts(m.get("content"))]
        text = rule.text + (" Results: " + " | ".join(r.strip() for r in results) if results else "")
        return reply(thinking(rule.thinking), text) if rule.thinking else reply(text)

    @staticmethod
    def _match(rule: Rule, prompt: str, body: Json) -> re.Match[str] | None:
        return re.search(rule.prompt, prompt, re.IGNORECASE) if rule.model in (None, body.get("model")) else None


def _filled(input: Json, match: re.Match[str]) -> Json:
    """The call's input with `{1}`… in its strings replaced by the prompt pattern's groups (a path the prompt names)."""
    groups = (match.group(0), *match.groups())
    return {k: v.format(*groups) if isinstance(v, str) else v for k, v in input.items()}
