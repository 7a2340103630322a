"""A run in the process it is in: a cold `sprout-agent`, or a warm interpreter's child (faces/warm/child.py).
A bare interactive start skips Typer; whatever escapes becomes one line and the exit code `errors.exit_code_of`
gives it.

Typer (with the pydantic it loads to parse options) costs ~0.2 s; `sprout-agent` alone in a terminal needs no
parsing, so the prompt comes up without it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sprout_agent.core.errors import EXIT_RUNTIME, exit_code_of, sprout_error_in
from sprout_agent.faces.cli.exits import exit_now, fail


def run() -> None:
    """The run itself, in this process (cold) or in a warm child (faces/warm/child.py); either hardened itself
    first (trust/secrecy.harden)."""
    try:
        if len(sys.argv) == 1 and sys.stdin.isatty():
            from sprout_agent.config.options import Options
            from sprout_agent.faces.cli import start

            exit_now(start.run(Options(prompt=None, cwd=Path.cwd().resolve()), interactive=True))
        from sprout_agent.faces.cli.app import app
        from sprout_agent.faces.cli.argv import run

        run(app, sys.argv[1:])
    except KeyboardInterrupt as error:
        exit_now(exit_code_of(error))
    except BaseException as error:
        found = sprout_error_in(error)
        if found is not None:
            fail(str(found), exit_code_of(found))
        if os.environ.get("SPROUT_AGENT_DEBUG") or not isinstance(error, Exception):
            raise
        fail(f"internal error: {type(error).__name__}: {error}", EXIT_RUNTIME)
