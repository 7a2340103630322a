"""The client the MCP conformance suite drives: sprout-agent, headless, with a scripted fake model.

`conformance client --command "python -m tests.conformance_client"` runs this once per scenario, with the
scenario's server URL as the last argument and `MCP_CONFORMANCE_SCENARIO` (and, for some auth scenarios,
`MCP_CONFORMANCE_CONTEXT`) set. It starts the fake Anthropic API scripted so the model calls the scenario's
tool once and then ends its turn, writes `{"conf": {"type": "http", "url": URL}}`, and runs
`sprout-agent -p` on it with the built-in servers off.

scripts/conformance sets two variables the suite passes on: `CONFORMANCE_AGENT_SECONDS`, the limit on the
run (the idle machine's `RUN_TIMEOUT` scaled by the load when the scenario started), and
`CONFORMANCE_WARM_DIR`, a runtime directory of its own where the run may use the warm interpreter (ended by
scripts/conformance at the end). Without it the run is cold, so nothing is left behind.

The suite counts a scenario that produced no checks as passed (a client that never connected "passes"
`initialize`), so this exits 1 unless sprout-agent reported the server running and, where the scenario has a
tool, the call happened (its result reached the model). Its last stderr line is the verdict,
`conformance-client: VERDICT ...`, which scripts/conformance reads back from the suite's stderr.txt; `TIMEOUT`
when the run did not end within its limit (scripts/conformance runs such a scenario once more).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fake_anthropic import FakeAnthropic, Reply, reply, tool_use

SERVER = "conf"
RUN_TIMEOUT = 50.0  # seconds on an idle machine; scripts/conformance gives the suite 60 s (both scaled by load)
LIMIT_VARIABLE = "CONFORMANCE_AGENT_SECONDS"
WARM_VARIABLE = "CONFORMANCE_WARM_DIR"
VERDICT_PREFIX = "conformance-client:"

# The tool each scenario's server offers (none for `initialize`, which lists no tools), and its arguments.
_TOOLS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "initialize": None,
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}
_AUTH_TOOL = ("test-tool", {})  # every auth/* scenario's protected server (helpers/createServer.ts)
# Scenarios where refusing to connect is the right outcome (the suite's allowClientError): a client must not
# authorize against a resource it was not asked for, nor retry a scope step-up forever.
REFUSING = frozenset({"auth/resource-mismatch", "auth/scope-retry-limit"})


@dataclass(frozen=True)
class Outcome:
    connected: bool  # the init line shows the server running
    called: bool  # the model's tool_use was answered with a tool_result
    error: str  # the server's error from init, if any
    exit_code: int | None


def scenario_tool(scenario: str) -> tuple[str, dict[str, Any]] | None:
    if scenario.startswith("auth/"):
        return _AUTH_TOOL
    if scenario not in _TOOLS:
        raise SystemExit(f"{VERDICT_PREFIX} unknown scenario {scenario!r}: add its tool to tests/conformance_client.py")
    return _TOOLS[scenario]


def model_script(tool: tuple[str, dict[str, Any]] | None) -> list[Any]:
    """One turn: call the scenario's tool if it is offered (else just answer), then end the turn."""
    if tool is None:
        return [reply("Connected.")]
    name, arguments = f"{SERVER}__{tool[0]}", tool[1]

    def first(body: dict[str, Any]) -> Reply:
        offered = {t.get("name") for t in body.get("tools", [])}
        return reply(tool_use(name, arguments, id="toolu_conf")) if name in offered else reply("No tool.")

    return [first, reply("Done.")]


# The client ID metadata document URL the suite's basic-cimd authorization server expects (the official SDKs'
# conformance clients use the same one); the suite never fetches it there.
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def config_for(url: str, context: Mapping[str, Any], scenario: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "http", "url": url}
    if scenario == "auth/basic-cimd":
        entry["oauth"] = {"clientMetadataUrl": CIMD_URL}
    if "client_id" in context:
        # Pre-registered client credentials (auth/pre-registration, client-credentials-*): the shape proposed to
        # the OAuth work, Claude Code's `oauth.clientId` plus the secret through a variable, never the file.
        entry["oauth"] = {"clientId": context["client_id"]}
        if "client_secret" in context:
            entry["oauth"]["clientSecret"] = "${CONFORMANCE_CLIENT_SECRET}"
    return {"mcpServers": {SERVER: entry}}


def child_env(scenario: str, fake_url: str, home: Path, context: Mapping[str, Any]) -> dict[str, str]:
    # The caller's warm interpreter directory stays out too: the run is warm only in scripts/conformance's own.
    dropped = ("ANTHROPIC_", "SPROUT_AGENT_", "MCP_", "CONFORMANCE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped) and k != "XDG_RUNTIME_DIR"}
    env.update(
        ANTHROPIC_API_KEY="sk-ant-conformance-fake",
        ANTHROPIC_BASE_URL=fake_url,
        SPROUT_AGENT_BUILTIN_SERVERS="none",
        # Unattended: accept an elicitation's defaults when every required field has one (the client
        # capabilities work implements it; until then the elicitation scenario is an expected failure).
        SPROUT_AGENT_ELICITATION="accept-defaults",
        # A fresh user directory per run: no stored token, transcript or approval carries between scenarios.
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",  # tokens go to the file store, inside `home`
        SPROUT_AGENT_WARM="0",
    )
    if warm_dir := os.environ.get(WARM_VARIABLE):
        # Starts cost ~0.1 s of CPU instead of ~1.2 s (docs/cli.md, Start-up), in a directory that
        # scripts/conformance owns and clears: no warm interpreter outlives the run.
        env.update(SPROUT_AGENT_WARM="1", XDG_RUNTIME_DIR=warm_dir)
    if scenario.startswith("auth/"):
        # The OAuth work's test-only redirect handler: sprout-agent GETs the authorization URL itself (no
        # browser, redirects not followed) and hands the Location's code and state to its own callback.
        env["SPROUT_AGENT_OAUTH_TEST_REDIRECT"] = "1"
    if "client_secret" in context:
        env["CONFORMANCE_CLIENT_SECRET"] = str(context["client_secret"])
    return env


def read_outcome(
    stdout: str, tool: tuple[str, dict[str, Any]] | None, fake: FakeAnthropic, code: int | None
) -> Outcome:
    servers: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and (event.get("type"), event.get("subtype")) == ("system", "init"):
            servers = event.get("mcp_servers") or []
    ours = next((s for s in servers if s.get("name") == SERVER), {})
    connected = ours.get("status") == "connected"
    called = tool is not None and any(_answers_tool(r.body) for r in fake.requests)
    return Outcome(connected, called, str(ours.get("error") or ""), code)


def _answers_tool(body: dict[str, Any]) -> bool:
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_conf"
            for b in content
        ):
            return True
    return False


def verdict(scenario: str, tool: tuple[str, dict[str, Any]] | None, outcome: Outcome) -> tuple[bool, str]:
    """(ok, one line): did sprout-agent do what the scenario needs for its checks to mean anything?"""
    facts = f"connected={outcome.connected} called={outcome.called} exit={outcome.exit_code}"
    if outcome.error:
        facts += f" error={outcome.error[:200]!r}"
    if outcome.exit_code is None:  # killed at the limit: what it did so far proves nothing either way
        return False, f"TIMEOUT {facts}"
    if scenario in REFUSING:
        return not outcome.called, f"{'REFUSED' if not outcome.called else 'NOT-REFUSED'} {facts}"
    ok = outcome.connected and (tool is None or outcome.called)
    return ok, f"{'OK' if ok else 'FAILED'} {facts}"


def run_limit(env: Mapping[str, str]) -> float:
    """Seconds the run may take: scripts/conformance's load-scaled limit, else the idle machine's."""
    try:
        seconds = float(env.get(LIMIT_VARIABLE) or RUN_TIMEOUT)
    except ValueError:
        return RUN_TIMEOUT
    return seconds if 0 < seconds < math.inf else RUN_TIMEOUT


def run(scenario: str, url: str, context: Mapping[str, Any]) -> int:
    tool = scenario_tool(scenario)
    with tempfile.TemporaryDirectory(prefix="sprout-conf-") as tmp, FakeAnthropic(model_script(tool)) as fake:
        home = Path(tmp)
        config = home / "conf.json"
        config.write_text(json.dumps(config_for(url, context, scenario)), encoding="utf-8")
        command = [sys.executable, "-m", "sprout_agent", "-p", "Call the tool once, then stop."]
        command += ["--config", str(config), "--cwd", tmp, "--output-format", "stream-json", "--max-turns", "3"]
        try:
            done = subprocess.run(
                command,
                env=child_env(scenario, fake.base_url, home, context),
                capture_output=True,
                text=True,
                timeout=run_limit(os.environ),
                stdin=subprocess.DEVNULL,
            )
            stdout, stderr, code = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired as expired:
            stdout, stderr, code = _text(expired.stdout), _text(expired.stderr), None
        sys.stderr.write(stderr)
        ok, line = verdict(scenario, tool, read_outcome(stdout, tool, fake, code))
    print(f"{VERDICT_PREFIX} {line}", file=sys.stderr)
    return 0 if ok else 1


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def main(argv: list[str]) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not scenario or len(argv) < 2:
        print(f"{VERDICT_PREFIX} usage: MCP_CONFORMANCE_SCENARIO=S {argv[0]} ... SERVER_URL", file=sys.stderr)
        return 2
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    return run(scenario, argv[-1], context)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
