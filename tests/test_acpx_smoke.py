"""A second, independent ACP client: `acpx` (npm) runs one prompt against `sprout-agent acp`."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import ROOT, agent_command, agent_env

pytestmark = pytest.mark.e2e

ACPX = ROOT / ".ci/peers/node_modules/.bin/acpx"


def test_acpx_runs_a_tool_turn_end_to_end(tmp_path: Path) -> None:
    if not ACPX.exists():
        pytest.skip("acpx is not installed (.ci/run installs it into .ci/peers)")
    (tmp_path / "a.json").write_text("{}")
    script: list[Step] = [reply("Listing.", tool_use("dev__glob", {"pattern": "*.json"})), reply("Hello from sprout.")]
    env = agent_env(tmp_path, None, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"})
    agent = shlex.join(agent_command(["acp"]))
    client = [str(ACPX), "--agent", agent, "--cwd", str(tmp_path), "--approve-all", "--format", "json"]
    with FakeAnthropic(script) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
        completed = subprocess.run(
            [*client, "--timeout", "60", "exec", "list json files"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=bounded(90),
        )
    assert completed.returncode == 0, completed.stderr[-2000:]
    wire = [json.loads(line) for line in completed.stdout.splitlines() if line.strip()]
    assert wire[1]["result"]["protocolVersion"] == 1
    updates = [m["params"]["update"] for m in wire if m.get("method") == "session/update"]
    kinds = [u["sessionUpdate"] for u in updates]
    assert "tool_call" in kinds and "tool_call_update" in kinds and "usage_update" in kinds
    text = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert "Hello from sprout." in text
    assert wire[-1]["result"] == {"stopReason": "end_turn"}
