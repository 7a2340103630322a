"""The flags `sprout-agent acp` takes, shared by the server and the per-session setup (a leaf, stdlib only)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sprout_agent.config.locations import Locations


@dataclass(frozen=True, slots=True)
class AcpOptions:
    config_files: tuple[Path, ...] = ()
    model: str | None = None
    max_turns: int | None = None
    permission_mode: str = "auto"
    allow_tools: tuple[str, ...] = ()
    deny_tools: tuple[str, ...] = ()
    trust_project: bool = False  # the sessions' project .mcp.json servers start without approval
    sandbox: str | None = None  # as the main command's --sandbox; None = SPROUT_AGENT_SANDBOX or the default
    sandbox_network: str | None = None
    sandbox_allow_write: tuple[Path, ...] = ()
    thinking: str | None = None  # as the main command's --thinking/--effort; checked when a session prepares
    effort: str | None = None
    web: bool | None = None
    locations: Locations = field(default_factory=Locations.nowhere)  # sessions None: not recorded, not loadable
