"""The rules that keep the conformance run honest (tests/conformance_client.py, scripts/conformance.py), without
the suite: it needs Node 22 and minutes, so CI runs it as its own step (scripts/conformance)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conformance_client import RUN_TIMEOUT, Outcome, child_env, config_for, run_limit, scenario_tool, verdict

ROOT = Path(__file__).resolve().parent.parent


def conformance_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_script", ROOT / "scripts" / "conformance.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name) or importlib.util.module_from_spec(spec)
    if spec.name not in sys.modules:
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return module


def result_dir(tmp_path: Path, checks: list[dict[str, str]], stderr: str) -> Path:
    run = tmp_path / "initialize-2026"
    run.mkdir(parents=True)
    (run / "checks.json").write_text(json.dumps(checks))
    (run / "stderr.txt").write_text(stderr)
    return tmp_path


def test_a_run_that_never_connected_fails_although_the_suite_counts_no_checks_as_a_pass() -> None:
    ok, line = verdict("initialize", None, Outcome(connected=False, called=False, error="refused", exit_code=0))
    assert not ok and line.startswith("FAILED connected=False")
    tool = scenario_tool("tools_call")
    assert not verdict("tools_call", tool, Outcome(True, False, "", 0))[0]  # connected, but the model never called
    assert verdict("tools_call", tool, Outcome(True, True, "", 0))[0]


def test_a_scenario_the_wrapper_does_not_know_stops_it_instead_of_guessing_a_tool() -> None:
    with pytest.raises(SystemExit, match="unknown scenario"):
        scenario_tool("brand-new-scenario")


def test_pre_registered_credentials_reach_the_config_as_client_id_and_a_variable_never_the_secret() -> None:
    entry = config_for("http://localhost:1/mcp", {"client_id": "cid", "client_secret": "s3cret"})["mcpServers"]["conf"]
    assert entry["oauth"] == {"clientId": "cid", "clientSecret": "${CONFORMANCE_CLIENT_SECRET}"}
    assert "s3cret" not in json.dumps(entry)


def test_a_refusing_scenario_passes_only_once_the_client_tried_oauth_discovery(tmp_path: Path) -> None:
    script = conformance_script()
    passed = [{"id": "resource-mismatch-rejected", "status": "SUCCESS", "description": "rejected"}]
    where = result_dir(tmp_path, passed, "conformance-client: REFUSED connected=False\n")
    assert not script.judge("auth/resource-mismatch", 0, where).passed
    tried = [
        *passed,
        {"id": "incoming-request", "status": "INFO", "description": "GET /.well-known/oauth-protected-resource/mcp"},
    ]
    (next(where.iterdir()) / "checks.json").write_text(json.dumps(tried))
    assert script.judge("auth/resource-mismatch", 0, where).passed


def test_no_checks_or_no_verdict_is_a_failure_even_when_the_suite_exits_0(tmp_path: Path) -> None:
    script = conformance_script()
    assert script.judge("initialize", 0, result_dir(tmp_path / "a", [], "conformance-client: OK\n")).note
    ok = [{"id": "mcp-client-initialization", "status": "SUCCESS"}]
    assert script.judge("initialize", 0, result_dir(tmp_path / "b", ok, "no verdict\n")).note
    assert script.judge("initialize", 0, result_dir(tmp_path / "c", ok, "conformance-client: OK x\n")).passed


def test_an_expected_failure_that_passes_fails_the_run_so_the_list_stays_true(
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = conformance_script()
    passing = [script.Result("initialize", True, 1, 1, "")]
    assert script.report(passing, {"initialize": "was broken"}) == 1
    assert "UNEXPECTED PASS" in capsys.readouterr().out
    failing = [script.Result("initialize", False, 0, 1, "no")]
    assert script.report(failing, {}) == 1
    assert script.report(failing, {"initialize": "known"}) == 0


def test_the_expected_failures_file_gives_every_scenario_a_reason() -> None:
    expected = conformance_script().expected_failures(ROOT / "tests" / "conformance_expected.txt")
    assert "auth/client-credentials-basic" in expected  # an extension, not planned
    assert all(reason for reason in expected.values())
    assert not any(name.startswith(("initialize", "tools_call", "elicitation", "sse")) for name in expected)


# A stand-in for the suite's `client` command (the real one needs Node 22 and minutes): it records how it was
# called and writes, for each attempt at a scenario, the result files the real suite writes, with the client
# verdict the plan gives for that attempt.
FAKE_SUITE = """
import json, os, sys, pathlib
args = sys.argv[1:]
scenario, out = args[args.index("--scenario") + 1], pathlib.Path(args[args.index("-o") + 1])
state = pathlib.Path(os.environ["FAKE_SUITE_STATE"])
attempt = len(list(state.glob(scenario.replace("/", "_") + "-*")))
(state / f"{scenario.replace('/', '_')}-{attempt}").write_text(json.dumps({
    "timeout_ms": int(args[args.index("--timeout") + 1]),
    "agent_seconds": os.environ.get("CONFORMANCE_AGENT_SECONDS"),
    "warm_dir": os.environ.get("CONFORMANCE_WARM_DIR"),
}))
verdict = json.loads(os.environ["FAKE_SUITE_PLAN"])[scenario][attempt]
run = out / f"{scenario}-2026-12-05T12-00-00-000Z"
run.mkdir(parents=True)
status = "SUCCESS" if verdict == "OK" else "FAILURE"
(run / "checks.json").write_text(json.dumps([{"id": "mcp-client-initialization", "status": status}]))
(run / "stderr.txt").write_text(f"conformance-client: {verdict} connected=x\\n")
sys.exit(0 if verdict == "OK" else 1)
"""


def fake_suite_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: dict[str, list[str]]
) -> tuple[list[Any], Path]:
    """Every scenario of `plan` through scripts/conformance's run and retry, against the stand-in suite."""
    script = conformance_script()
    suite, state = tmp_path / "suite.py", tmp_path / "state"
    suite.write_text(FAKE_SUITE)
    state.mkdir()
    monkeypatch.setenv("FAKE_SUITE_STATE", str(state))
    monkeypatch.setenv("FAKE_SUITE_PLAN", json.dumps(plan))
    out, warm_dir = tmp_path / "out", tmp_path / "run"
    results: list[Any] = []
    for scenario in plan:
        first = script.run_one(sys.executable, str(suite), scenario, script.result_dir(out, scenario), warm_dir)
        results.append(script.with_retry(sys.executable, str(suite), first, out, warm_dir))
    return results, state


@pytest.mark.e2e
def test_a_scenario_that_timed_out_runs_once_more_and_one_that_failed_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = {"initialize": ["TIMEOUT", "OK"], "tools_call": ["TIMEOUT", "TIMEOUT"], "sse-retry": ["FAILED", "OK"]}
    results, state = fake_suite_runs(tmp_path, monkeypatch, plan)
    script = conformance_script()
    assert [script.outcome(r) for r in results] == ["passed on retry", "timed out twice", "failed"]
    assert sorted(p.name for p in state.iterdir()) == [
        "initialize-0", "initialize-1", "sse-retry-0", "tools_call-0", "tools_call-1",
    ]  # fmt: skip
    assert script.report(results, {"sse-retry": "known"}) == 1  # tools_call timed out twice: not a pass
    out = capsys.readouterr().out
    assert "passed on retry" in out and "UNEXPECTED FAILURE" in out
    assert "2 retried after a timeout (1 passed on retry)" in out
    assert script.report(results[:1], {}) == 0  # a pass on retry is a pass


@pytest.mark.e2e
def test_every_limit_of_a_scenario_scales_by_the_same_load_factor_and_the_agent_runs_warm_in_the_runs_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (result,), state = fake_suite_runs(tmp_path, monkeypatch, {"initialize": ["OK"]})
    called = json.loads((state / "initialize-0").read_text())
    assert result.factor >= 1
    assert called["timeout_ms"] == round(60_000 * result.factor)
    assert float(called["agent_seconds"]) == pytest.approx(50 * result.factor, abs=0.1)
    assert called["warm_dir"] == str(tmp_path / "run")


def test_the_agent_runs_cold_unless_given_the_runs_own_warm_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/somebody")
    monkeypatch.setenv("CONFORMANCE_AGENT_SECONDS", "75")
    monkeypatch.delenv("CONFORMANCE_WARM_DIR", raising=False)
    cold = child_env("initialize", "http://127.0.0.1:1", Path("/home"), {})
    assert cold["SPROUT_AGENT_WARM"] == "0" and "XDG_RUNTIME_DIR" not in cold
    assert not any(name.startswith("CONFORMANCE_") for name in cold)
    monkeypatch.setenv("CONFORMANCE_WARM_DIR", "/tmp/conformance-run")
    warm = child_env("initialize", "http://127.0.0.1:1", Path("/home"), {})
    assert (warm["SPROUT_AGENT_WARM"], warm["XDG_RUNTIME_DIR"]) == ("1", "/tmp/conformance-run")


def test_the_agents_limit_is_the_given_one_else_the_idle_machines() -> None:
    assert run_limit({"CONFORMANCE_AGENT_SECONDS": "120.5"}) == 120.5
    assert run_limit({}) == RUN_TIMEOUT
    for junk in ("soon", "-1", "0", "inf", "nan"):
        assert run_limit({"CONFORMANCE_AGENT_SECONDS": junk}) == RUN_TIMEOUT


def test_an_agent_killed_at_its_limit_is_a_timeout_whatever_it_did_before() -> None:
    for scenario in ("tools_call", "auth/resource-mismatch"):
        ok, line = verdict(scenario, scenario_tool(scenario), Outcome(True, False, "", None))
        assert not ok and line.startswith("TIMEOUT ")
