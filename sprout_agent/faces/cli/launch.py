"""The `sprout-agent` entry point: a run that goes to completion goes to the warm interpreter when one can take
it (faces/warm); everything else runs in this process (run_here.py)."""

from __future__ import annotations

import os
import sys

from sprout_agent.core import collection
from sprout_agent.core.errors import exit_code_of
from sprout_agent.faces.cli.exits import exit_now
from sprout_agent.faces.cli.run_here import run
from sprout_agent.faces.warm import place as warm_place
from sprout_agent.trust.secrecy import harden


def main() -> None:
    """`sprout-agent`: a run that goes to completion goes to a warm interpreter when one can take it
    (faces/warm); otherwise, and for everything else, it runs here."""
    harden()  # first: the relay a warm run leaves here holds the key as long as a cold run does
    if warm_place.wanted(sys.argv[1:], os.environ, _is_terminal(0)):
        from sprout_agent.faces.cli.warm_run import PROGRAM
        from sprout_agent.faces.warm.client import hand_over

        try:
            hand_over(PROGRAM)  # returns only when the run is to happen here
        except KeyboardInterrupt as error:
            exit_now(exit_code_of(error))
    collection.hold()  # until the session runs or a subcommand is chosen (core/collection.py)
    run()


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False
