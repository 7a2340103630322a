"""A session's life. `prepared.py` decides everything from the options before any server starts (a bad flag, file
or session id fails here with exit 2); `runtime.py` (`open_runtime`) is the composition root, one async context
manager that owns the servers, the model client, the transcript, the hooks and the agent, and ends them in reverse
order. It gives every collaborator at construction and sets nothing after: `server_pool.py` is the one factory of a
`ServerPool` (a run, `mcp doctor` and `hooks test` alike), `model_building.py` builds the model client in a
thread, `assembly.py` the agent and its parts; the two real cycles (the `agent` server's delegator needs the agent,
a server's sampling the model) go through core's late-bound handle. `store.py` the transcript (append-only
JSONL), `index.py` finds and lists sessions; `delegation.py` builds and runs subagents; `checkpointing.py` the
checkpoint tracker of a session; `rewinding.py` the one rewind, with `branches.py` (a transcript forked at a turn)
and `continuing.py` (the session going on in the fork); `session_telemetry.py` a session's OpenTelemetry, loaded
when on; `command_hooks.py` the settings files' command hooks; `keeping.py` an "always" answer kept in
`.claude/settings.local.json`; `recording.py` what the transcript records from the
loop's events (each reply's usage, the spend) and the Claude Code copy of it (`claude_transcript.py`);
`recorded.py` reads a transcript back for the exports, `atif.py` as an ATIF trajectory; `taping.py` --record and
--replay (cassettes).

Imports: mcp, model, batch, checkpoints, telemetry, config, trust, core.
"""
