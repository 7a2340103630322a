"""The Claude Agent SDKs' control protocol over `--input-format stream-json`: stdin read while a turn runs
(`control.py`, with `user_lines.py` for the user's lines and `prompt_queue.py`, the queue bounded in bytes), and
what the SDKs' requests do to the session (`sdk_session.py`: initialize, interrupt, permission questions, model and
mode switches; `sdk_hooks.py`: their hook callbacks; `sdk_rewind.py`: their file checkpointing). The headless face
drives it.

Imports: faces/slash_commands, session, mcp, trust, core.
"""
