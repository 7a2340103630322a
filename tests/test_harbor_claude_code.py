"""Harnesses written for Claude Code run sprout-agent unchanged: Harbor's own `claude-code` agent class (its command
line, `--max-turns`, `--continue`, IS_SANDBOX=1, CLAUDE_CONFIG_DIR, and its parsing of the stream and the session
log) drives our binary installed as `claude`, on the fake API, under the harbor virtualenv (tests/harbor_drive.py);
skipped, saying why, without that virtualenv."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, Step, error, reply, tool_use
from tests.harbor_venv import drive, harbor_python
from tests.harness import API_KEY, agent_env

pytestmark = pytest.mark.e2e
MODEL = "claude-sonnet-4-5"


def container(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A home with our binary installed as `~/.local/bin/claude` (where Claude Code's installer puts it), the task's
    directory and the agent's logs directory."""
    home, app, logs = tmp_path / "home", tmp_path / "app", tmp_path / "logs" / "agent"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "claude").symlink_to(Path(sys.executable).parent / "sprout-agent")
    app.mkdir()
    logs.mkdir(parents=True)
    return home, app, logs


def run_claude_code(tmp_path: Path, script: list[Step], **spec: Any) -> tuple[dict[str, Any], FakeAnthropic, Path]:
    harbor_python()  # skips first when there is no harbor virtualenv
    home, app, logs = container(tmp_path)
    (app / "notes.txt").write_text("alpha\n")
    with FakeAnthropic(script) as fake:
        env = agent_env(home, fake, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"})
        full = {"workdir": str(app), "logs_dir": str(logs), "env": env, "model": f"anthropic/{MODEL}", **spec}
        (tmp_path / "spec.json").write_text(json.dumps(full))
        harbor_env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ANTHROPIC_API_KEY": API_KEY}
        found = drive("claude-code", tmp_path / "spec.json", harbor_env | {"ANTHROPIC_BASE_URL": fake.base_url})
    return found, fake, logs


def stream(logs: Path) -> list[dict[str, Any]]:
    text = (logs / "claude-code.txt").read_text()
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_harbors_claude_code_agent_runs_sprout_agent_and_fills_its_context_from_the_stream_and_session(
    tmp_path: Path,
) -> None:
    read = tool_use("dev__read", {"file_path": "notes.txt"}, id="r1")
    script: list[Step] = [
        reply(read, usage={"input_tokens": 900, "output_tokens": 9}),
        reply("Read it.", usage={"input_tokens": 1000, "output_tokens": 7}),
        reply("Again.", usage={"input_tokens": 1100, "output_tokens": 3}),
    ]
    found, fake, logs = run_claude_code(
        tmp_path, script, instruction="Read notes.txt", resume_instruction="Once more", kwargs={"max_turns": 4}
    )
    assert found["raised"] is None, found["raised"]
    runs = [c for c in found["commands"] if "--output-format=stream-json" in c["command"]]
    assert len(runs) == 2 and "--max-turns 4 --permission-mode=bypassPermissions --print" in runs[0]["command"]
    assert "--continue --print" in runs[1]["command"]
    assert {"IS_SANDBOX", "CLAUDE_CONFIG_DIR", "ANTHROPIC_MODEL"} <= set(runs[0]["env"])
    bodies = [r.body for r in fake.requests]
    assert [b["model"] for b in bodies] == [MODEL] * 3  # the model Harbor passes in ANTHROPIC_MODEL
    assert bodies[0]["messages"][0]["content"][0]["text"] == "Read notes.txt"  # the instruction on stdin
    assert bodies[2]["messages"][0]["content"][0]["text"] == "Read notes.txt"  # --continue: the same session
    # The stream Harbor parses: its result line's cost (the last run's `tee` kept only that run's lines).
    results = [line for line in stream(logs) if line["type"] == "result"]
    assert [(r["subtype"], r["is_error"]) for r in results] == [("success", False)]
    assert found["cost_from_stream"] == results[0]["total_cost_usd"] > 0
    # The session log Harbor converts, where CLAUDE_CONFIG_DIR says: tokens per step, the calls and their results.
    context, trajectory = found["context"], found["trajectory"]
    assert (context["n_input_tokens"], context["n_output_tokens"]) == (900 + 1000 + 1100, 9 + 7 + 3)
    assert context["cost_usd"] == results[0]["total_cost_usd"]
    steps = trajectory["steps"]
    assert [s["source"] for s in steps] == ["user", "agent", "agent", "user", "agent"]
    assert steps[0]["message"] == "Read notes.txt" and steps[3]["message"] == "Once more"
    call = steps[1]["tool_calls"][0]
    assert (call["function_name"], call["arguments"]) == ("dev__read", {"file_path": "notes.txt"})
    assert "alpha" in steps[1]["observation"]["results"][0]["content"]
    assert steps[2]["message"] == "Read it." and steps[2]["metrics"]["prompt_tokens"] == 1000
    sessions = list((logs / "sessions" / "projects").rglob("*.jsonl"))
    assert len(sessions) == 1 and trajectory["session_id"] == sessions[0].stem


def test_a_failed_run_is_read_the_way_harbor_reads_claude_code_failures(tmp_path: Path) -> None:
    found, _, logs = run_claude_code(
        tmp_path, [error(401, message="invalid x-api-key")], instruction="Read notes.txt", kwargs={"max_turns": 2}
    )
    result = next(line for line in stream(logs) if line["type"] == "result")
    assert result["is_error"] is True and "API key" in result["result"]
    assert found["raised"] is not None and "NonZeroAgentExitCodeError" in found["raised"]["family"]
    assert '"is_error": true' in found["raised"]["text"]  # Harbor kept our result line as the failure's evidence


def test_max_turns_ends_the_run_with_claude_codes_error_subtype(tmp_path: Path) -> None:
    script: list[Step] = [reply(tool_use("dev__read", {"file_path": "notes.txt"}, id="r1"))]
    found, fake, logs = run_claude_code(tmp_path, script, instruction="Read notes.txt", kwargs={"max_turns": 1})
    result = next(line for line in stream(logs) if line["type"] == "result")
    assert (result["subtype"], result["is_error"]) == ("error_max_turns", True)
    assert len(fake.requests) == 1
    assert found["context"]["n_input_tokens"] > 0  # the session log is there for a run that stopped early too
