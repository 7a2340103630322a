"""What `sprout-agent acp` starts each session from (a leaf of the ACP face)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options


@dataclass(frozen=True, slots=True)
class AcpSetup:
    """The command line's options as the sessions' template (each `session/new` or `session/load` sets its own
    directory and session to load) and where the user's files are (sessions None: not recorded, not loadable)."""

    template: Options = field(default_factory=Options)
    locations: Locations = field(default_factory=Locations.nowhere)
