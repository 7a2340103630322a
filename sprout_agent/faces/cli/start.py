"""From parsed options to a running face: prepare (exit 2 on bad config), then the REPL or the headless run.

The entry point (launch.py) and the Typer app (app.py) both end here; neither calls the other.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.errors import SproutError, exit_code_of
from sprout_agent.faces.cli.exits import fail_as
from sprout_agent.faces.cli.pick_session import with_picked_session
from sprout_agent.session.prepared import Prepared, prepare
from sprout_agent.trust.private_files import open_private


def run(options: Options, interactive: bool) -> int:
    """Prepares the session and runs it; returns the exit code. Errors after preparation propagate."""
    try:
        locations = Locations.for_user()
        options = with_picked_session(options, locations.sessions)
        prepared = prepare(options, locations, os.environ)
    except SproutError as error:
        fail_as(options.output_format, str(error), error.exit_code)
    os.chdir(options.cwd)
    _route_logging(prepared.locations.server_log if options.verbose else None)
    try:
        return _run_face(prepared, interactive)
    except KeyboardInterrupt as error:  # before a face's signal watch listens (Typer would say "Aborted!")
        return exit_code_of(error)


def _route_logging(log: Path | None) -> None:
    """Python logging goes where servers' stderr goes: the verbose log file, or nowhere. Unconfigured, logging
    prints warnings with their tracebacks on stderr (the built-in servers, in our process, log a tool's crash
    there; so do the SDKs), which in json modes is quiet without -v and in a terminal belongs to the renderer."""
    handler: logging.Handler = logging.NullHandler()
    if log is not None:
        handler = _AppendToFile(log)
    root = logging.getLogger()
    for earlier in [h for h in root.handlers if getattr(h, _ROUTED, False)]:  # one per process, not one per run
        root.removeHandler(earlier)
        earlier.close()
    setattr(handler, _ROUTED, True)
    root.addHandler(handler)


_ROUTED = "sprout_agent_routed"  # marks the handler _route_logging installed


def _run_face(prepared: Prepared, interactive: bool) -> int:
    if not interactive:
        from sprout_agent.faces.headless.run import run_headless

        return run_headless(prepared)
    import anyio

    from sprout_agent.faces.repl.repl import run_repl
    from sprout_agent.faces.terminal.consent_prompt import ask_about_project_servers
    from sprout_agent.faces.terminal.render import TerminalRenderer

    options = prepared.options
    renderer = TerminalRenderer(interactive=True, verbose=options.verbose)
    if options.verbose:
        read = ", ".join(str(p) for p in prepared.loaded.files_read) or "none"
        renderer.say(f"config files read: {read}", "dim")
    prepared = ask_about_project_servers(prepared)  # before any server starts
    for notice in (*prepared.loaded.notices, *prepared.held_back_notices()):
        renderer.say(notice, "yellow")
    return anyio.run(run_repl, prepared, renderer)


class _AppendToFile(logging.Handler):
    """Opens the file per record (they are rare: warnings and errors); a record that cannot be written is lost
    quietly, where logging's own handlers would print a traceback on stderr, the very thing avoided."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception), os.fdopen(open_private(self.path), "a", errors="replace") as log:
            log.write(self.format(record) + "\n")
