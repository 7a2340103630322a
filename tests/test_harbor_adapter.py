"""Our Harbor adapter (examples/harbor/sprout_harbor.py) against the `harbor` package itself, under the harbor
virtualenv (tests/harbor_drive.py; skipped without it): its install (uv installs a wheel of this tree into the task's
home), its run with the model and limits Harbor passes, `--resume` for Harbor's resume, the ATIF trajectory it
exports and validates, the context it fills (tokens, cache, cost), MCP servers Harbor passes, and a failure read
from the stream's result line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, error, reply, tool_use
from tests.harbor_venv import drive, harbor_python
from tests.harness import API_KEY, FAKE_MCP, agent_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent
MODEL = "claude-sonnet-4-5"
NETWORK = ("SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy")


def wheel(tmp_path: Path) -> Path:
    """A wheel of this tree, as `--ak wheel=…` would pass one."""
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=bounded(300),
    )
    return next(out.glob("sprout_agent-*.whl"))


def run_adapter(tmp_path: Path, script: list[Step], *, installed: bool, **spec: Any) -> tuple[dict[str, Any], Path]:
    """The adapter driven as Harbor's trial drives it. `installed`: sprout-agent is in the task's home already (no
    install), else the adapter installs it with uv (found on the task's PATH, as in an image that has it)."""
    python = harbor_python()  # skips first when there is no harbor virtualenv
    home, app, logs = tmp_path / "home", tmp_path / "app", tmp_path / "logs" / "agent"
    (home / ".local" / "bin").mkdir(parents=True)
    app.mkdir()
    logs.mkdir(parents=True)
    (app / "notes.txt").write_text("alpha\n")
    if installed:
        (home / ".local" / "bin" / "sprout-agent").symlink_to(Path(sys.executable).parent / "sprout-agent")
    with FakeAnthropic(script) as fake:
        env = agent_env(home, fake, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"})
        env.pop("ANTHROPIC_BASE_URL")  # Harbor passes the endpoint (and the key) it was given
        env.pop("ANTHROPIC_API_KEY")
        if not installed:
            env.pop("PYTHONPATH")  # the installed tool runs its own copy, not this tree's
            env["PATH"] = f"{Path(python).parent}:/usr/local/bin:/usr/bin:/bin"  # uv, and a python3 for it
            env["UV_CACHE_DIR"] = str(ROOT / ".ci" / "uv-cache")
            env |= {name: os.environ[name] for name in NETWORK if name in os.environ}  # how this machine gets out
        full = {
            "workdir": str(app),
            "logs_dir": str(logs),
            "env": env,
            "model": f"anthropic/{MODEL}",
            "paths": {"/installed-agent": str(tmp_path / "installed-agent")},
            **spec,
        }
        (tmp_path / "spec.json").write_text(json.dumps(full))
        harbor_env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ANTHROPIC_API_KEY": API_KEY}
        found = drive("sprout", tmp_path / "spec.json", harbor_env | {"ANTHROPIC_BASE_URL": fake.base_url}, 600)
        found["requests"] = [r.body for r in fake.requests]
    return found, logs


def test_the_adapter_installs_sprout_agent_runs_the_task_and_fills_harbors_context_from_its_atif_trajectory(
    tmp_path: Path,
) -> None:
    read = tool_use("dev__read", {"file_path": "notes.txt"}, id="r1")
    script: list[Step] = [
        reply("Reading.", read, usage={"input_tokens": 800, "output_tokens": 9, "cache_read_input_tokens": 200}),
        reply("It says alpha.", usage={"input_tokens": 1000, "output_tokens": 7}),
        reply("Still alpha.", usage={"input_tokens": 1200, "output_tokens": 4}),
    ]
    found, logs = run_adapter(
        tmp_path,
        script,
        installed=False,
        setup=True,
        instruction="What does notes.txt say?",
        resume_instruction="Again?",
        kwargs={"wheel": str(wheel(tmp_path)), "max_turns": 5, "max_budget_usd": "2", "reasoning_effort": "low"},
    )
    assert found["raised"] is None, found["raised"]
    assert (tmp_path / "home" / ".local" / "bin" / "sprout-agent").exists()  # uv put it on the task's PATH
    assert found["version"] == "0.1.0"
    commands = [c["command"] for c in found["commands"]]
    assert any("uv tool install --force" in c and c.count(".whl") == 1 for c in commands)
    runs = [c for c in commands if "--output-format=stream-json" in c]
    assert len(runs) == 2 and "--max-turns 5" in runs[0] and "--max-budget-usd 2" in runs[0]
    assert "--permission-mode=bypassPermissions" in runs[0] and "--session-id " in runs[0]
    session_id = runs[0].split("--session-id ")[1].split()[0]
    assert f"--resume {session_id}" in runs[1]  # Harbor's resume goes on in the same session
    assert "What does notes.txt say?" not in "".join(commands)  # the instruction comes on stdin
    bodies = found["requests"]
    assert [b["model"] for b in bodies] == [MODEL] * 3
    assert bodies[0]["output_config"]["effort"] == "low"  # Harbor's --effort
    assert bodies[0]["messages"][0]["content"][0]["text"] == "What does notes.txt say?"
    # The trajectory the adapter exported and Harbor's model validated, and the context filled from it.
    trajectory = found["trajectory"]
    assert trajectory["session_id"] == session_id and trajectory["agent"]["name"] == "sprout-agent"
    assert [s["source"] for s in trajectory["steps"]] == ["user", "agent", "agent", "user", "agent"]
    assert "alpha" in trajectory["steps"][1]["observation"]["results"][0]["content"]
    context = found["context"]
    assert (context["n_input_tokens"], context["n_cache_tokens"], context["n_output_tokens"]) == (
        1000 + 1000 + 1200,
        200,
        9 + 7 + 4,
    )
    result = [json.loads(line) for line in (logs / "sprout-agent.txt").read_text().splitlines() if '"result"' in line]
    assert context["cost_usd"] == pytest.approx(trajectory["final_metrics"]["total_cost_usd"]) and context["cost_usd"]
    assert context["metadata"]["session_id"] == session_id and result[-1]["is_error"] is False


def test_an_api_failure_is_classified_from_the_result_lines_status_and_the_context_still_filled(
    tmp_path: Path,
) -> None:
    found, _ = run_adapter(
        tmp_path, [error(401, message="invalid x-api-key")], installed=True, instruction="Hello", kwargs={}
    )
    assert found["raised"]["type"] == "AgentAuthenticationError"  # Harbor's class: not retried as a flaky error
    assert "API error 401" in found["raised"]["text"]
    assert found["trajectory"] is not None and found["trajectory"]["steps"][0]["message"] == "Hello"
    assert found["context"]["metadata"]["is_error"] is True and found["context"]["cost_usd"] == 0.0


def test_mcp_servers_harbor_passes_are_given_to_the_run(tmp_path: Path) -> None:
    script: list[Step] = [reply(tool_use("task__echo", {"text": "from harbor"}, id="e1")), reply("Echoed.")]
    server = {"name": "task", "transport": "stdio", "command": sys.executable, "args": [FAKE_MCP]}
    found, _ = run_adapter(tmp_path, script, installed=True, instruction="Echo", kwargs={}, mcp_servers=[server])
    assert found["raised"] is None, found["raised"]
    assert "task__echo" in [t["name"] for t in found["requests"][0]["tools"]]
    observed = found["trajectory"]["steps"][1]["observation"]["results"][0]
    assert observed["content"] == "from harbor"
