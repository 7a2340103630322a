"""One-line status texts that the terminal's slash commands and the editors' (ACP) commands share."""

from __future__ import annotations

from sprout_agent.agent import Agent


def context_line(agent: Agent) -> str:
    """`/context`: how full the window is, when compaction fires, how long the history is."""
    used = agent.context_estimate()
    compactor = agent.compactor
    window = compactor.window if compactor else 0
    share = f" of {window} ({100 * used / window:.0f} %)" if window else ""
    threshold = compactor.threshold if compactor else None
    when = f"; compacts past {threshold}" if threshold is not None else "; automatic compaction off"
    system = len(agent.system) // 4  # the same 4-characters-a-token estimate as agent.fixed_tokens
    tools = max(0, agent.fixed_tokens - system)
    parts = f"system ~{system}, tools ~{tools}, messages ~{max(0, used - agent.fixed_tokens)}"
    return f"context: ~{used} tokens{share} ({parts}){when}; {len(agent.history)} messages"
