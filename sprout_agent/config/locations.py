"""Where sprout-agent keeps things on disk: the one module that asks platformdirs.

Tests and the ACP server pass their own `Locations`; nothing else computes a user directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

APP = "sprout-agent"
# Where Claude Code reads managed (administrator) settings on Linux and WSL; they win over every other file.
MANAGED_SETTINGS = Path("/etc/claude-code/managed-settings.json")


@dataclass(frozen=True, slots=True)
class Locations:
    config: Path | None  # the user MCP config lives here (mcp.json); None = no user config
    sessions: Path | None  # session transcripts; None = nothing is recorded or resumable
    data: Path | None  # prompt history
    logs: Path | None  # MCP servers' stderr with --verbose
    cache: Path | None = None  # what can be fetched again (the Models API's entries); None = nothing cached
    managed_settings: Path | None = None  # Claude Code's managed settings file; None = none is read

    @classmethod
    def for_user(cls) -> Locations:
        """The platform's user directories (~/.config/sprout-agent, ~/.local/share/sprout-agent, …)."""
        import platformdirs

        data = Path(platformdirs.user_data_dir(APP))
        return cls(
            Path(platformdirs.user_config_dir(APP)),
            data / "sessions",
            data,
            Path(platformdirs.user_log_dir(APP)),
            Path(platformdirs.user_cache_dir(APP)),
            MANAGED_SETTINGS,
        )

    @classmethod
    def nowhere(cls) -> Locations:
        """Nothing on disk: no user config, no transcripts, no history, no logs."""
        return cls(None, None, None, None)

    @property
    def prompt_history(self) -> Path | None:
        return self.data / "prompt-history" if self.data is not None else None

    @property
    def server_log(self) -> Path | None:
        return self.logs / "servers.log" if self.logs is not None else None
