"""Stop reasons are one typed vocabulary (core/stop_reasons.py): the API's are the SDK's, each reason ends a run with
its documented exit code and result subtype (docs/stream-json.md, "Exit codes"), and every table that maps them
names only reasons there are. In-process.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest

from sprout_agent.core.errors import EXIT_BUDGET, EXIT_MAX_TURNS, EXIT_OK, EXIT_RUNTIME, exit_code_for_stop
from sprout_agent.core.stop_reasons import FINISHED, ModelStop, StopReason, TurnStop
from sprout_agent.faces.acp.sessions import STOP_REASONS as ACP_STOP_REASONS
from sprout_agent.faces.headless.stream_lines import RESULT_SUBTYPE


def names(alias: Any) -> set[str]:
    """The strings of a Literal, or of a union of Literals (however nested)."""
    found: set[str] = set()
    for arg in get_args(alias):
        found |= {arg} if isinstance(arg, str) else names(arg)
    return found


# reason → (exit code, result subtype), as docs/stream-json.md documents them.
DOCUMENTED = {
    "end_turn": (EXIT_OK, "success"),
    "stop_sequence": (EXIT_OK, "success"),
    "hook_stopped": (EXIT_OK, "success"),
    "max_tokens": (EXIT_RUNTIME, "success"),
    "refusal": (EXIT_RUNTIME, "success"),
    "tool_use": (EXIT_RUNTIME, "success"),
    "pause_turn": (EXIT_RUNTIME, "success"),
    "model_context_window_exceeded": (EXIT_RUNTIME, "success"),
    "structured_output_retries": (EXIT_RUNTIME, "error_max_structured_output_retries"),
    "max_turns": (EXIT_MAX_TURNS, "error_max_turns"),
    "budget": (EXIT_BUDGET, "error_max_budget_usd"),
    "error": (EXIT_RUNTIME, "error_during_execution"),
    "interrupted": (EXIT_RUNTIME, "error_during_execution"),
    "cancelled": (EXIT_RUNTIME, "error_during_execution"),
}


def test_the_models_stop_reasons_are_the_sdks() -> None:
    from anthropic.types import StopReason as SdkStopReason

    assert names(ModelStop) == names(SdkStopReason)


def test_every_reason_is_a_turns_or_a_faces_and_finished_means_the_model_ended_its_answer() -> None:
    assert names(StopReason) == set(DOCUMENTED) and names(ModelStop) < names(TurnStop) < names(StopReason)
    assert {"end_turn", "stop_sequence"} == FINISHED


@pytest.mark.parametrize(("reason", "ending"), DOCUMENTED.items())
def test_every_stop_reason_ends_a_run_with_its_documented_exit_code_and_subtype(
    reason: StopReason, ending: tuple[int, str]
) -> None:
    assert (exit_code_for_stop(reason), RESULT_SUBTYPE.get(reason, "success")) == ending


def test_the_tables_that_map_stop_reasons_name_only_reasons_there_are() -> None:
    assert set(RESULT_SUBTYPE) <= names(StopReason)
    assert set(ACP_STOP_REASONS) <= names(TurnStop)
