"""The Claude Agent SDKs' control protocol over `--input-format stream-json`: stdin read while a turn runs
(`control.py`, with the queue of prompts bounded in bytes, `prompt_queue.py`), and what the SDKs' requests do to
the session (`sdk_session.py`: initialize, interrupt, permission questions, model and mode switches;
`sdk_hooks.py`: their hook callbacks; `sdk_rewind.py`: their file checkpointing). The headless face
(`faces/headless/run.py`) drives it; it imports no face above it.
"""
