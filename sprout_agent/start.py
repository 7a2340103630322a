"""From parsed options to a running face: prepare (exit 2 on bad config), then the REPL or the headless run.

The entry point (launch.py) and the Typer app (cli.py) both end here; neither calls the other.
"""

from __future__ import annotations

import os

from sprout_agent.errors import SproutError, exit_code_of
from sprout_agent.exits import fail_as
from sprout_agent.locations import Locations
from sprout_agent.options import Options, Prepared, prepare


def run(options: Options, interactive: bool) -> int:
    """Prepares the session and runs it; returns the exit code. Errors after preparation propagate."""
    try:
        prepared = prepare(options, Locations.for_user(), os.environ)
    except SproutError as error:
        fail_as(options.output_format, str(error), error.exit_code)
    os.chdir(options.cwd)
    try:
        return _run_face(prepared, interactive)
    except KeyboardInterrupt as error:  # before a face's signal watch listens (Typer would say "Aborted!")
        return exit_code_of(error)


def _run_face(prepared: Prepared, interactive: bool) -> int:
    if not interactive:
        from sprout_agent.headless import run_headless

        return run_headless(prepared)
    import anyio

    from sprout_agent.repl import run_repl
    from sprout_agent.ui.consent_prompt import ask_about_project_servers
    from sprout_agent.ui.render import TerminalRenderer

    options = prepared.options
    renderer = TerminalRenderer(interactive=True, verbose=options.verbose)
    if options.verbose:
        read = ", ".join(str(p) for p in prepared.loaded.files_read) or "none"
        renderer.say(f"config files read: {read}", "dim")
    prepared = ask_about_project_servers(prepared)  # before any server starts
    for notice in (*prepared.loaded.notices, *prepared.held_back_notices()):
        renderer.say(notice, "yellow")
    return anyio.run(run_repl, prepared, renderer)
