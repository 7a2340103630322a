"""`-p`: a run to completion for scripts. `run.py` the run, `jsonl.py` the `json` and `stream-json` sinks,
`stream_lines.py` the lines in Claude Code's shapes; with `--input-format stream-json` it drives the SDKs' control
protocol (`faces/sdk/`).

Imports: faces/sdk, faces/terminal, faces/lifecycle, faces/warm, session, config, trust, core.
"""
