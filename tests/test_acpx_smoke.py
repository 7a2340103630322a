"""A second, independent ACP client: `acpx` (npm) runs one prompt against `sprout-agent acp`."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.trust.sandbox import BWRAP, Policy, Sandbox
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import ROOT, agent_command, agent_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ACPX = ROOT / ".ci/peers/node_modules/.bin/acpx"


def run_acpx(tmp_path: Path, script: list[Step], prompt: str) -> list[dict[str, Any]]:
    """acpx (offering fs and terminal, as by default) runs one prompt against `sprout-agent acp` with the dev
    server; every message of the wire, as acpx's `--format json` prints it."""
    env = agent_env(tmp_path, None, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"})
    agent = shlex.join(agent_command(["acp"]))
    client = [str(ACPX), "--agent", agent, "--cwd", str(tmp_path), "--approve-all", "--format", "json"]
    with FakeAnthropic(script) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
        completed = subprocess.run(
            [*client, "--timeout", "60", "exec", prompt],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=bounded(90),
        )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return [json.loads(line) for line in completed.stdout.splitlines() if line.strip()]


def test_acpx_runs_a_tool_turn_end_to_end(tmp_path: Path) -> None:
    if not ACPX.exists():
        pytest.skip("acpx is not installed (.ci/run installs it into .ci/peers)")
    (tmp_path / "a.json").write_text("{}")
    script: list[Step] = [reply("Listing.", tool_use("dev__glob", {"pattern": "*.json"})), reply("Hello from sprout.")]
    wire = run_acpx(tmp_path, script, "list json files")
    assert wire[1]["result"]["protocolVersion"] == 1
    updates = [m["params"]["update"] for m in wire if m.get("method") == "session/update"]
    kinds = [u["sessionUpdate"] for u in updates]
    assert "tool_call" in kinds and "tool_call_update" in kinds and "usage_update" in kinds
    text = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert "Hello from sprout." in text
    assert wire[-1]["result"] == {"stopReason": "end_turn"}


def test_acpx_serves_the_dev_tools_files_and_commands_through_its_fs_and_terminal(tmp_path: Path) -> None:
    """acpx offers fs and terminal by default: the write and the edit go through its fs methods, the command
    through its terminal, under the same sandbox command line (bubblewrap; else the dev server runs it)."""
    if not ACPX.exists():
        pytest.skip("acpx is not installed (.ci/run installs it into .ci/peers)")
    (tmp_path / "notes.txt").write_text("alpha\n")
    edit = {"file_path": "notes.txt", "old_string": "alpha", "new_string": "beta"}
    script: list[Step] = [
        reply(tool_use("dev__read", {"file_path": "notes.txt"})),
        reply(tool_use("dev__edit", edit)),
        reply(tool_use("dev__write", {"file_path": "out.txt", "content": "written\n"})),
        reply(tool_use("dev__bash", {"command": "cat out.txt notes.txt > both.txt; echo ran"})),
        reply("Done."),
    ]
    wire = run_acpx(tmp_path, script, "edit, write, run")
    asked = [m["method"] for m in wire if "id" in m and m.get("method", "").startswith(("fs/", "terminal/"))]
    assert asked.count("fs/read_text_file") == 2 and asked.count("fs/write_text_file") == 2
    assert (tmp_path / "notes.txt").read_text() == "beta\n" and (tmp_path / "out.txt").read_text() == "written\n"
    assert (tmp_path / "both.txt").read_text() == "written\nbeta\n"
    sandbox = Sandbox(Policy.from_env({}, str(tmp_path)))
    if sandbox.active() and sandbox.mechanism() == BWRAP:  # the command ran in acpx's terminal
        assert {"terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"} <= set(asked)
    assert wire[-1]["result"] == {"stopReason": "end_turn"}
