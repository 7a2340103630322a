"""sprout-agent in the ACP registry: its entry (packaging/acp-registry/sprout-agent/) checked by the registry's own
build checks, the registry's auth check run against `sprout-agent acp`, `authMethods` and `authenticate`, and
Harbor's generic ACP runner starting the entry's `uvx` command and completing a prompt (under the harbor
virtualenv, with a wheel of this tree offered to uvx; skipped without that virtualenv)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sprout_agent import __version__
from tests.acp_pipes import pipe_agent
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply
from tests.harbor_venv import harbor_python
from tests.harness import API_KEY, ROOT, agent_env

REGISTRY = ROOT / "third_party" / "acp-registry"
ENTRY = ROOT / "packaging" / "acp-registry" / "sprout-agent"


def registry_module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """One of the registry's own scripts, loaded from its vendored file (URL checks off: they need the network)."""
    monkeypatch.setenv("SKIP_URL_VALIDATION", "1")
    monkeypatch.syspath_prepend(str(REGISTRY))
    spec = importlib.util.spec_from_file_location(f"acp_registry_{name}", REGISTRY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_entry_passes_the_registrys_own_build_checks_and_names_this_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    build = registry_module("build_registry", monkeypatch)
    schema = json.loads((REGISTRY / "agent.schema.json").read_text())
    entry, errors = build.process_entry(ENTRY, "agent.json", "agent", schema, "https://cdn.example", {})
    assert errors == [] and entry["icon"] == "https://cdn.example/sprout-agent.svg"
    assert entry["version"] == __version__ and entry["distribution"]["uvx"] == {
        "package": f"sprout-agent=={__version__}",
        "args": ["acp"],
    }


@pytest.mark.e2e
def test_the_registrys_auth_check_passes_against_sprout_agent_acp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = registry_module("client", monkeypatch)
    env = agent_env(tmp_path, None)
    result = client.run_auth_check([sys.executable, "-m", "sprout_agent", "acp"], tmp_path, env, bounded(60))
    assert result.success, result.error
    assert {(m.id, m.type) for m in result.auth_methods} == {("anthropic-api-key", "env_var"), ("environment", "agent")}


@pytest.mark.anyio
async def test_authenticate_answers_with_a_key_and_asks_for_one_without_and_session_new_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    async with pipe_agent() as client:
        methods = (await client.request(1, "initialize", {"protocolVersion": 1}))["result"]["authMethods"]
        env_var = next(m for m in methods if m["type"] == "env_var")
        assert env_var["vars"][0]["name"] == "ANTHROPIC_API_KEY"
        refused = await client.request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        without = await client.request(3, "authenticate", {"methodId": "anthropic-api-key"})
        unknown = await client.request(4, "authenticate", {"methodId": "oauth"})
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)  # as a client that sets the variable would start us
        with_key = await client.request(5, "authenticate", {"methodId": "environment"})
    assert refused["error"]["code"] == -32000 and "ANTHROPIC_API_KEY" in refused["error"]["message"]
    assert without["error"]["code"] == -32000 and "ANTHROPIC_API_KEY" in without["error"]["message"]
    assert unknown["error"]["code"] == -32602
    assert with_key["result"] == {}
    assert API_KEY not in json.dumps(client.messages)


@pytest.mark.e2e
def test_harbors_acp_runner_starts_the_entry_by_its_uvx_command_and_completes_a_prompt(tmp_path: Path) -> None:
    python = harbor_python()  # skips first when there is no harbor virtualenv
    uvx = Path(python).parent / "uvx"
    has_acp = subprocess.run([python, "-c", "import acp"], capture_output=True, timeout=bounded(60)).returncode == 0
    if not uvx.exists() or not has_acp:
        pytest.skip("uv or agent-client-protocol missing in the harbor virtualenv: .ci/run installs them there")
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=bounded(300),
    )
    entry = json.loads((ENTRY / "agent.json").read_text())
    uvx_entry = entry["distribution"]["uvx"]
    launcher = tmp_path / "acp-launch.sh"  # what Harbor's AcpAgent writes for a uvx distribution
    launcher.write_text(f'#!/bin/sh\nexec {uvx} {uvx_entry["package"]} {" ".join(uvx_entry["args"])} "$@"\n')
    launcher.chmod(0o755)
    installed = Path(python).parent.parent / "lib"
    runner_py = tmp_path / "acp_runner.py"  # Harbor uploads it alone and runs it with a Python that has `acp`
    runner_py.write_text(
        next(installed.glob("python3*/site-packages/harbor/agents/installed/acp_runner.py")).read_text()
    )
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    with FakeAnthropic([reply("Hello from sprout-agent.")]) as fake:
        env = agent_env(tmp_path / "home", fake, {"UV_FIND_LINKS": str(wheels)})
        env.pop("PYTHONPATH")  # uvx runs its own install of the wheel, not this tree
        env["UV_CACHE_DIR"] = str(ROOT / ".ci" / "uv-cache")
        env |= {name: os.environ[name] for name in ("SSL_CERT_FILE", "SSL_CERT_DIR") if name in os.environ}
        env |= {"ACP_RUNNER_AUTH_POLICY": "auto", "ACP_RUNNER_AGENT_ID": entry["id"]}
        done = subprocess.run(
            [python, str(runner_py), "--instruction", "Say hello", "--logs-dir", str(logs), "--launcher",
             str(launcher)],
            cwd=work, env=env, capture_output=True, text=True, timeout=bounded(300),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary: dict[str, Any] = json.loads((logs / "acp-summary.json").read_text())
    assert summary["agent_info"]["name"] == "sprout-agent"
    assert summary["selected_authenticate_method_id"] == "anthropic-api-key"  # the key is set: Harbor picks it
    assert summary["authenticate_response"] == {} and "error" not in summary
    assert summary["prompt_response"] == {"stopReason": "end_turn"}
    events = [json.loads(line) for line in (logs / "acp-events.jsonl").read_text().splitlines()]
    updates = [e["payload"]["update"] for e in events if e["event_type"] == "session_update"]
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == "Hello from sprout-agent."
