"""What a person sees in a terminal, for the REPL and for `-p` progress on stderr; the only importer of rich and
prompt_toolkit. Rendering (`render.py`, `board.py`, `live_view.py`, `tool_view.py`, `subagent_lines.py`), the pure
screen logic without rich (`calls.py`, `diff_view.py`, `checklist.py`, `md_blocks.py`), questions and input (`ask.py`,
`consent_prompt.py` with `settings_consent.py`, `elicit_form.py`, `input.py`, `rewind_view.py`), `@file` attachments
(`prompt_attach.py`).

Imports: session, mcp, checkpoints, config, trust, core.
"""
