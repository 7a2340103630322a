"""`sprout-agent acp`: the agent loop served to editors over the Agent Client Protocol (version 1, stdio).

`server.py` the request handler, `auth.py` its `authMethods` and `authenticate`; the JSON-RPC wire (`wire.py`,
`lines.py`); one runtime per session (`sessions.py`, `setup.py`, `session_template.py`: the command line's options
as every session's template); events as `session/update` (`updates.py`, `toolview.py`); slash commands
(`commands.py`), prompt content (`prompt_content.py`) and `session/load` replay (`replay.py`); the editor's pickers
(`choices.py`) and `session/list` (`listing.py`); the dev tools through the editor's buffers and terminals
(`editor_host.py`, `editor_files.py`, `editor_terminal.py`).

Imports: faces/lifecycle, faces/slash_commands, session, mcp, model, checkpoints, config, trust, core.
"""
