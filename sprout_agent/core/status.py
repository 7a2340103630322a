"""One-line status texts that the terminal's slash commands and the editors' (ACP) commands share."""

from __future__ import annotations

from typing import cast

from sprout_agent.core.agent import Agent
from sprout_agent.core.protocols import ModelRequest


async def counted_context_line(agent: Agent) -> str:
    """`/context` with the API's exact counts (messages.count_tokens) where the client offers them."""
    count = getattr(agent.model, "count_tokens", None)
    counts = None
    if count is not None:
        counts = await count(ModelRequest(agent.system, tuple(agent.history), agent.tools))
    if not isinstance(counts, tuple):
        return context_line(agent)
    system, tools, messages = cast(tuple[int, int, int], counts)
    return _line(agent, system + tools + messages, f"system {system}, tools {tools}, messages {messages}", "")


def context_line(agent: Agent) -> str:
    """`/context`: how full the window is, when compaction fires, how long the history is (estimated)."""
    used = agent.context_estimate()
    system = len(agent.system) // 4  # the same 4-characters-a-token estimate as agent.fixed_tokens
    tools = max(0, agent.fixed_tokens - system)
    parts = f"system ~{system}, tools ~{tools}, messages ~{max(0, used - agent.fixed_tokens)}"
    return _line(agent, used, parts, "~")


def _line(agent: Agent, used: int, parts: str, about: str) -> str:
    compactor = agent.compactor
    window = compactor.window if compactor else 0
    share = f" of {window} ({100 * used / window:.0f} %)" if window else ""
    threshold = compactor.threshold if compactor else None
    when = f"; compacts past {threshold}" if threshold is not None else "; automatic compaction off"
    counted = "" if about else " (counted by the API)"
    return f"context: {about}{used} tokens{share}{counted} ({parts}){when}; {len(agent.history)} messages"
