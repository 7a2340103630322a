"""A session's life. `prepared.py` decides everything from the options before any server starts (a bad flag, file
or session id fails here with exit 2); `runtime.py` (`open_runtime`) is the composition root, one async context
manager that owns the servers, the model client, the transcript, the hooks and the agent, and ends them in reverse
order; `store.py` the transcript (append-only JSONL), `index.py` finds and lists sessions; `delegation.py` builds
and runs subagents; `checkpointing.py` the checkpoint tracker of a session; `rewinding.py` the one rewind, with
`branches.py` (a transcript forked at a turn) and `continuing.py` (the session going on in the fork);
`session_telemetry.py` a session's OpenTelemetry, loaded when on; `command_hooks.py` the settings files' command hooks;
`taping.py` --record and --replay (cassettes).

Imports: mcp, model, checkpoints, telemetry, config, trust, core.
"""
