"""Structured output (`--json-schema`): the turn's answer is a `StructuredOutput` tool call whose input we validate.

As in Claude Code, the model gets one more tool, `StructuredOutput`, whose input schema is the user's schema; it may
call any other tools first. A call we find valid ends the turn with its input as the answer; an invalid one, or a
turn that ends without the call, is answered with what was wrong and the model tries again, `max_attempts` times in
all. The value reported is always one that passed our own validation (`check`), whatever the API enforced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sprout_agent.core.messages import INVALID_INPUT_KEY, Message, Text, user_text
from sprout_agent.core.protocols import ToolOutcome, ToolSpec
from sprout_agent.core.stop_reasons import ModelStop, TurnStop

STRUCTURED_OUTPUT_TOOL = "StructuredOutput"  # Claude Code's name: hook matchers and transcripts written for it match
MAX_ATTEMPTS = 5  # Claude Code's MAX_STRUCTURED_OUTPUT_RETRIES default
RETRIES_EXHAUSTED: TurnStop = "structured_output_retries"  # the turn's stop reason when no attempt gave a valid value
DESCRIPTION = (
    "Use this tool to return your final response in the requested structured format. You MUST call this tool "
    "exactly once at the end of your response to provide the structured output."
)
ACCEPTED = "Structured output provided successfully"
NUDGE = f"You MUST call the {STRUCTURED_OUTPUT_TOOL} tool to complete this request. Call this tool now."

# The problems with a value (each one line, for the model to fix); empty: the value is valid against the schema.
Check = Callable[[Mapping[str, object]], list[str]]


@dataclass(frozen=True, slots=True)
class OutputContract:
    """The schema the turn's answer must satisfy (its root is an object: a tool's input is one) and its check."""

    schema: Mapping[str, object]
    check: Check
    max_attempts: int = MAX_ATTEMPTS

    def spec(self) -> ToolSpec:
        """The tool offered to the model; `strict`: the API constrains its input where the model supports it."""
        schema = dict(self.schema)
        return ToolSpec(STRUCTURED_OUTPUT_TOOL, "", STRUCTURED_OUTPUT_TOOL, DESCRIPTION, schema, True, strict=True)


# The reply ended without a StructuredOutput call the turn needs: the model is asked again (while attempts last).
_NO_ANSWER: frozenset[ModelStop] = frozenset({"end_turn", "tool_use", "max_tokens", "stop_sequence"})


class Answer:
    """One user turn's structured answer: the first valid value, and the failed attempts before it."""

    def __init__(self, contract: OutputContract) -> None:
        self.contract = contract
        self.value: dict[str, object] | None = None
        self.failures = 0
        self.last_problem = ""

    @property
    def settled(self) -> bool:
        """The turn can end: a valid value, or no attempt left."""
        return self.value is not None or self.exhausted

    @property
    def exhausted(self) -> bool:
        return self.value is None and self.failures >= self.contract.max_attempts

    def offer(self, value: Mapping[str, object]) -> ToolOutcome:
        """A `StructuredOutput` call: the tool result the model reads."""
        if self.value is not None:
            return _refused("the structured output was already provided; it is not replaced")
        unreadable = INVALID_INPUT_KEY in value and len(value) == 1  # the API's input was not a JSON object
        problems = ["root: the input is not a JSON object"] if unreadable else self.contract.check(value)
        if problems:
            self.failures += 1
            self.last_problem = "; ".join(problems)
            return _refused(f"Output does not match required schema: {self.last_problem}")
        self.value = dict(value)
        return ToolOutcome((Text(ACCEPTED),))

    def wanted_after(self, stop_reason: ModelStop) -> bool:
        """The reply ended (as `stop_reason` says) without the StructuredOutput call the turn still needs."""
        return self.value is None and stop_reason in _NO_ANSWER

    def missing(self) -> Message | None:
        """The model ended its reply without a valid call: the message that asks again, None when out of attempts."""
        self.failures += 1
        self.last_problem = f"the reply ended without a {STRUCTURED_OUTPUT_TOOL} call"
        return None if self.exhausted else user_text(NUDGE)

    def failure(self) -> str:
        """Why the turn has no structured output (Claude Code's wording, with the last problem)."""
        return f"Failed to provide valid structured output after {self.failures} attempts — last error: " + (
            self.last_problem
        )

    def text(self) -> str:
        """The answer as text: the JSON value (what text mode prints and `result` carries)."""
        return json.dumps(self.value, ensure_ascii=False)


def _refused(why: str) -> ToolOutcome:
    return ToolOutcome((Text(why),), is_error=True)
