"""The loop's bounds as one record (a leaf: the options record holds one without importing the loop)."""

from __future__ import annotations

from dataclasses import dataclass

from sprout_agent.core.stop_reasons import LimitStop


@dataclass(frozen=True, slots=True)
class Limits:
    """How far the loop may go. A flag that bounds the loop is a field here: the command line fills it by name
    (faces/cli/flags.py), so such a flag touches only this record, its one declaration and the loop."""

    # Model requests per user turn (--max-turns: Claude Code's name for it; the stop reason keeps that name too).
    max_requests: int | None = None  # None = no limit
    max_budget_usd: float | None = None  # the session's spend (the ledger's cost) after which no request starts
    max_parallel_tools: int = 8  # tool calls of one reply run at once (SPROUT_AGENT_MAX_PARALLEL_TOOLS)

    def reached(self, requests: int, spent_usd: float) -> LimitStop | None:
        """The stop reason once a bound is reached before the next request (`max_turns`, `budget`), else None."""
        if self.max_requests is not None and requests >= self.max_requests:
            return "max_turns"
        if self.max_budget_usd is not None and spent_usd >= self.max_budget_usd:
            return "budget"
        return None
