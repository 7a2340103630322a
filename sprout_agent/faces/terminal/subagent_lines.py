"""A subagent's progress as a person sees it, nested under the parent's `task` call: its tool calls collapsed into
the call's one live line (the newest), and with --verbose a line each; its warnings, hook objections and end always.
"""

from __future__ import annotations

from dataclasses import dataclass

from sprout_agent.core import events as ev
from sprout_agent.core.stop_reasons import FINISHED
from sprout_agent.faces.terminal.calls import short_arguments
from sprout_agent.trust.untrusted import visible

NEST = "  ↳ "


@dataclass(frozen=True, slots=True)
class Shown:
    tail: str | None = None  # the parent call's live line, now
    line: str | None = None  # a line to print above the live region (plain text: the caller styles it dim)
    warning: bool = False


def outermost(event: ev.SubagentEvent) -> tuple[str, str, ev.Event]:
    """(the main agent's call the event nests under, the innermost agent's name, the innermost event)."""
    call_id, agent, inner = event.call_id, event.agent, event.event
    while isinstance(inner, ev.SubagentEvent):
        agent, inner = inner.agent, inner.event
    return call_id, agent, inner


def shown(event: ev.SubagentStarted | ev.SubagentEvent | ev.SubagentFinished, verbose: bool) -> Shown:
    match event:
        case ev.SubagentStarted():
            what = f": {event.description}" if event.description else ""
            return Shown(tail=f"{event.agent} ({event.model}) started{what}")
        case ev.SubagentFinished():
            why = f" ({event.error})" if event.error else ""
            line = (
                f"{NEST}{event.agent}: {event.stop_reason}{why} after {event.turns} requests, "
                f"{event.seconds:.1f}s, ${event.cost_usd:.4f}"
            )
            return Shown(line=visible(line), warning=event.stop_reason not in FINISHED)
        case ev.SubagentEvent():
            return _inner(*outermost(event)[1:], verbose)


def _inner(agent: str, event: ev.Event, verbose: bool) -> Shown:
    match event:
        case ev.ToolStarted():
            text = visible(f"{agent}: {event.name} {short_arguments(event.arguments)}")
            return Shown(tail=text, line=f"{NEST}{text}" if verbose else None)
        case ev.ToolFinished() if verbose or event.is_error:
            status = f"error {event.summary}" if event.is_error else "ok"
            return Shown(line=visible(f"{NEST}{agent}: {event.name} {status} {event.seconds:.2f}s"))
        case ev.Notice() if event.level in ("warning", "error"):
            return Shown(line=visible(f"{NEST}{agent}: {event.text}"), warning=True)
        case ev.HookObjected():
            first = event.text.strip().split("\n", 1)[0]
            return Shown(line=visible(f"{NEST}{agent}: hook {event.hook} from {event.server} objected: {first}"))
        case ev.AssistantText() if verbose:
            return Shown(line=visible(f"{NEST}{agent}: {event.text.strip()}"))
        case _:
            return Shown()
