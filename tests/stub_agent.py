"""A stand-in for `sprout-agent -p … --output-format stream-json` in the batch tests (SPROUT_AGENT_BATCH_AGENT):
it starts in milliseconds instead of seconds, so twenty tasks cost what one real run does. The prompt says what
to do: `fail` exits 1; `hang` waits for a signal (or, with STUB_HANG_UNLESS=path, only while path does not exist);
anything else writes answer.txt (and TRACEPARENT, if set, to traceparent.txt) in the working directory and
answers. A signal is reported as the real agent reports it (stop_reason interrupted, exit 130 / 143).
tests/test_batch_e2e.py runs the real CLI too."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import uuid
from pathlib import Path


def _result(text: str, stop: str, code: int) -> None:
    usage = {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    line = {"type": "result", "subtype": "success" if code == 0 else "error_during_execution", "is_error": code != 0,
            "result": text, "num_turns": 1, "duration_ms": 1, "total_cost_usd": 0.001, "usage": usage,
            "session_id": uuid.uuid4().hex, "exit_code": code, "stop_reason": stop,
            "errors": [] if code == 0 else [stop], "schema_version": 2}  # fmt: skip
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
    os._exit(code)


def main() -> None:
    args = sys.argv[1:]
    prompt = args[args.index("--") + 1]  # the batch puts the prompt after `--`, its options before
    done = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: _result("", "interrupted", 130))
    signal.signal(signal.SIGTERM, lambda *_: _result("", "interrupted", 143))
    sys.stdout.write(json.dumps({"type": "system", "subtype": "init", "session_id": "stub", "args": args}) + "\n")
    sys.stdout.flush()
    if "hang" in prompt and not Path(os.environ.get("STUB_HANG_UNLESS", "/nonexistent")).exists():
        done.wait(120)  # bounded: the test ends it with a signal long before
        _result("", "error", 1)
    if "fail" in prompt:
        _result("", "error", 1)
    Path("answer.txt").write_text(prompt + "\n")
    if traceparent := os.environ.get("TRACEPARENT"):  # the batch's trace, as the real agent would join it
        Path("traceparent.txt").write_text(traceparent)
    _result(f"answer to {prompt}", "end_turn", 0)


if __name__ == "__main__":
    main()
