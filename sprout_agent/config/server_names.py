"""Who gets a server name when two definitions share it: a later `--config`/`--mcp-config` file over an earlier
one, and the user's own server (user config, named files, built-ins) over the project's `.mcp.json`, always.

A project server of a name of yours would either replace your server (a hook guard in MCP_HOOK_SERVERS would then
be the repository's code) or, while unapproved, leave neither running (the guard gone without a question). So
yours stays and the project's is dropped, named in a notice.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # config.py imports this module
    from sprout_agent.config.files import ServerConfig


def shown(path: Path | None, cwd: Path) -> str:
    """A config file as notices name it: relative to `cwd` when inside it; None is a built-in server."""
    if path is None:
        return "built in"
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def shadow_notice(name: str, project_file: Path | None, yours: Path | None, cwd: Path) -> str:
    where = "built in" if yours is None else f"in {shown(yours, cwd)}"
    return (
        f"{shown(project_file, cwd)}: project server '{name}' not used: a server of yours has that name ({where}) "
        "and stays"
    )


def claim(merged: dict[str, ServerConfig], server: ServerConfig, overrides: bool, cwd: Path) -> str | None:
    """Adds `server` to `merged` unless the name is taken by a definition that wins; the notice of a clash."""
    earlier = merged.get(server.name)
    if earlier is None:
        merged[server.name] = server
        return None
    if earlier.project != server.project:
        yours, theirs = (server, earlier) if earlier.project else (earlier, server)
        merged[server.name] = yours
        return shadow_notice(server.name, theirs.source, yours.source, cwd)
    if overrides:
        merged[server.name] = server
    return f"server '{server.name}' defined twice: using the one in {shown(merged[server.name].source, cwd)}"


def drop_shadowed(
    servers: Iterable[ServerConfig], yours: dict[str, Path | None], cwd: Path
) -> tuple[tuple[ServerConfig, ...], tuple[str, ...]]:
    """`servers` without the project ones named in `yours` (name -> your definition's file, None = built in),
    and a notice for each dropped; for names whose own definition did not make it into `servers` (a broken entry
    of yours, a built-in added later)."""
    kept: list[ServerConfig] = []
    notices: list[str] = []
    for server in servers:
        if server.project and server.name in yours:
            notices.append(shadow_notice(server.name, server.source, yours[server.name], cwd))
        else:
            kept.append(server)
    return tuple(kept), tuple(notices)
