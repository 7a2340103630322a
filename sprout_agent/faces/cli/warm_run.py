"""What the warm interpreter (faces/warm) serves: the modules a `-p` run imports, and the run each forked child
becomes. The zygote's process starts here (`PROGRAM`, its command line, given to faces/warm/starting.py), so that
faces/warm, a mechanism below the command line, knows nothing of what it serves.

`python -m sprout_agent.faces.cli.warm_run` makes sure a zygote serves (`batch`, before its first task: started as
its tasks are, python -m with their environment, so that it finds their zygote); exit 0 when one does."""

from __future__ import annotations

from sprout_agent.trust.secrecy import harden

# The zygote's program (`python -P -c`): this module's `main`.
PROGRAM = "from sprout_agent.faces.cli.warm_run import main; main()"

# What a `-p` run imports, from the command line to the model client and the built-in servers (measured with
# `python -X importtime`); whatever a run imports beyond these it imports itself, as a cold run would.
PRELOAD = (
    "sprout_agent.faces.cli.app",
    "sprout_agent.faces.cli.argv",
    "sprout_agent.faces.cli.start",
    "sprout_agent.faces.headless.run",
    "sprout_agent.session.runtime",
    "sprout_agent.mcp.link",
    "sprout_agent.mcp.transports.in_process",
    "sprout_agent.model.client",
    "sprout_agent.tools.dev",
    "sprout_agent.tools.todo",
    "anthropic.lib.streaming",
    "httpx2",
)


def main() -> None:
    """The zygote: hardened first (its environment holds no credential, but every child it forks will), then
    `PRELOAD` imported and served."""
    harden()
    from sprout_agent.faces.warm import zygote  # here: a caller imports PROGRAM on its way to a warm run

    zygote.main(PRELOAD, _run)


def _run() -> None:
    from sprout_agent.faces.cli.run_here import run

    run()


if __name__ == "__main__":
    import os
    import sys

    harden()  # it holds the batch's environment, key included, while it starts the zygote
    from sprout_agent.faces.warm.starting import warm_up

    sys.exit(0 if warm_up(os.environ, PROGRAM) else 1)
