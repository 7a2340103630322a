"""`sprout-agent mcp approve` and `mcp revoke`: the user's answers about a project's `.mcp.json` servers,
given ahead of a headless run (CI, scripts, editors) instead of at an interactive prompt."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sprout_agent.config.consent import describe
from sprout_agent.config.files import ServerConfig
from sprout_agent.core.errors import EXIT_USAGE
from sprout_agent.faces.cli.commands.doctor import Setup
from sprout_agent.trust.untrusted import printable


def _chosen(setup: Setup, names: Sequence[str], every: bool) -> list[ServerConfig] | None:
    """The project servers named (or all of them); None after printing why not."""
    project = [server for server in setup.loaded.servers if server.project]
    if not project:
        where = "here" if not setup.loaded.files_read else ", ".join(str(p) for p in setup.loaded.files_read)
        sys.stderr.write(f"sprout-agent: no project MCP servers ({where}): nothing to approve or revoke\n")
        return None
    if every == bool(names):
        sys.stderr.write("sprout-agent: name the servers, or give --all\n")
        _list(project, setup)
        return None
    by_name = {server.name: server for server in project}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        sys.stderr.write(f"sprout-agent: not a project server here: {printable(', '.join(unknown))}\n")
        _list(project, setup)
        return None
    return project if every else [by_name[name] for name in names]


def _list(project: Sequence[ServerConfig], setup: Setup) -> None:
    lines = (line for server in project for line in describe(server, setup.secrets))
    sys.stderr.write("project servers:\n" + "\n".join(lines) + "\n")


def consent_command(setup: Setup, names: Sequence[str], every: bool, *, approve: bool) -> int:
    """`mcp approve` (`approve`) or `mcp revoke`: the same choice of servers, then the answer recorded or withdrawn."""
    chosen = _chosen(setup, names, every)
    if chosen is None:
        return EXIT_USAGE
    if approve:
        setup.approvals.answered(chosen, approved=True, secrets=setup.secrets)
        done, meaning = "approved", "it starts in runs here until its definition changes"
    else:
        setup.approvals.forgotten(chosen)
        done, meaning = "revoked", "runs here ask again (headless runs do not start it)"
    for server in chosen:
        print(f"{done} {server.name}: {meaning}")
    return 0
