"""The settings' apiKeyHelper end to end: the real CLI with Claude Code's user settings file against a gateway that
takes only the helper's key; what the helper prints reaches no MCP server, log, trace or transcript."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fake_anthropic import reply, tool_use
from tests.fake_providers import FakeGateway
from tests.harness import fake_server, run_agent, tool_results

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # telemetry on: its SDK's imports cost a second or two of CPU

KEY = "gw-helper-key-5f1e2d3c4b5a"


def test_a_settings_api_key_helpers_output_never_reaches_mcp_children_logs_traces_or_transcripts(
    tmp_path: Path,
) -> None:
    settings = tmp_path / ".claude" / "settings.json"  # HOME is tmp_path: the user's own file, applied at once
    settings.parent.mkdir()
    settings.write_text(json.dumps({"apiKeyHelper": f"echo {KEY}"}))
    servers = {"up": fake_server(tools="env")}
    script = [reply(tool_use("up__env", {"name": "ANTHROPIC_API_KEY"})), reply("done")]
    with FakeGateway(script, keys=(KEY,)) as fake:
        env = {
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "",  # none: the helper's key is the only one (as Claude Code orders them)
            "SPROUT_AGENT_TELEMETRY": "1",
            "SPROUT_AGENT_TELEMETRY_CONTENT": "1",
            "OTEL_TRACES_EXPORTER": "console",  # the spans on stderr, read below
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "console",
        }
        argv = ["-p", "what is in your env", "--verbose", "--output-format", "stream-json"]
        run = run_agent(tmp_path, argv, fake=None, servers=servers, env=env)
    assert run.code == 0, run.stderr
    init = next(json.loads(line) for line in run.stdout.splitlines() if '"subtype":"init"' in line.replace(" ", ""))
    assert init["apiKeySource"] == "apiKeyHelper"  # as Claude Code's init names a helper's key
    assert [r.headers["authorization"] for r in fake.requests] == [f"Bearer {KEY}"] * 2
    (seen,) = tool_results(fake.requests[1].body)
    assert seen["content"][0]["text"] == "<unset>"  # the server's environment has no key
    assert "invoke_agent" in run.stderr  # the trace was written where it is read here
    assert KEY not in run.stdout + run.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != settings]
    assert any(p.suffix == ".jsonl" for p in written)  # the transcript is among them
    assert not [p for p in written if KEY.encode() in p.read_bytes()]  # transcripts, logs, history: none has it
