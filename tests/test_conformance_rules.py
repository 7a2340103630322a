"""The rules that keep the conformance run honest (tests/conformance_client.py, scripts/conformance.py), without
the suite: it needs Node 22 and minutes, so CI runs it as its own step (scripts/conformance)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conformance_client import Outcome, config_for, scenario_tool, verdict

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
