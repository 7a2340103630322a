"""The command line: the only importer of typer. `launch.py` is the entry point (`sprout-agent`); `run_here.py` a run in
this process; `app.py` the Typer app; `argv.py` and `claude_flags.py` turn argv into what Typer parses;
`lazy_coercion.py` parses an unset option without pydantic; `flags.py` every flag, declared once; `start.py` goes
from options to a face; `stdin_prompt.py` the prompt from flags and stdin; `pick_session.py` `-r` without an id;
`exits.py` one line and an exit code; `warm_run.py` what the warm interpreter serves; `commands/` the subcommands
that are not a session.

Imports: faces/repl, faces/headless, faces/acp, faces/pages, faces/mcp_serve, faces/terminal, faces/warm, session, mcp,
model, batch, checkpoints, telemetry, config, trust, core.
"""
