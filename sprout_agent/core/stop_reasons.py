"""Why a model reply or a turn ended, as types: the API's reasons, the loop's own and the faces'. Every comparison
and every table that maps them (exit codes, result subtypes, ACP's names) is checked against these: a misspelt
reason is a type error, not a branch never taken.
"""

from __future__ import annotations

import enum
from typing import Literal

# The Messages API's `stop_reason` (the anthropic SDK's `StopReason`), for one reply.
ModelStop = Literal[
    "end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded"
]
# The loop's bounds (core/limits.py): `max_turns` is Claude Code's name for the limit on model requests.
LimitStop = Literal["max_turns", "budget"]
# How the loop ends a turn: with the last reply's reason, a bound, a hook's `continue: false`, or no valid
# structured answer left to ask for (--json-schema).
TurnStop = ModelStop | LimitStop | Literal["hook_stopped", "structured_output_retries"]
# How a face or the delegator ends what the loop did not: a signal or the SDK's interrupt, a failure, a cancel.
StopReason = TurnStop | Literal["interrupted", "error", "cancelled"]

# The model finished its answer (a stop sequence is an answer the caller asked to end there).
FINISHED: frozenset[StopReason] = frozenset({"end_turn", "stop_sequence"})


class GoingOn(enum.Enum):
    """Why the loop asks the model again instead of ending the turn with a result."""

    ASKED_AGAIN = "the reply lacked the structured answer the turn needs; the model is asked for it"
    OBJECTED = "a `_Stop` hook objected to the ending"
