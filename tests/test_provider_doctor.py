"""`sprout-agent doctor`'s provider check: decided as a run decides (settings files, Claude Code's variables), one
1-token request through the session's own client on each provider's wire (tests/fake_providers.py), a line per stage,
the failure naming the variable to fix with a run's exit code; `--offline` sends nothing. In-process, except the one
CLI run at the end."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.options import Options
from sprout_agent.faces.cli.commands.provider_doctor import Report, check_provider
from tests.fake_anthropic import cut, error, reply
from tests.fake_providers import FakeBedrock, FakeFoundry, FakeGateway, FakeVertex, ProviderFake
from tests.harness import run_agent

KEYS = ("ASIADOCTORDOCTORDOC1", "doctor-secret-key-0123456789")
ALL_HELD = ["ok   reachable", "ok   credentials accepted", "ok   model served", "ok   streaming"]


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The user's directories in the test's own: no real settings file is read, no model facts cached there."""
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    (tmp_path / "repo").mkdir()
    yield


def doctor(tmp_path: Path, env: dict[str, str], *, offline: bool = False, settings: tuple[str, ...] = ()) -> Report:
    environ = {"HOME": os.environ["HOME"], "PATH": os.environ["PATH"], **env}
    return check_provider(Options(cwd=tmp_path / "repo", settings=settings), environ, offline=offline)


def checks(report: Report) -> list[str]:
    return [line for line in report.lines if line[:4] in ("ok  ", "FAIL", "--  ")]


def _bedrock(tmp_path: Path, fake: Any) -> tuple[dict[str, str], tuple[str, ...]]:
    """Bedrock with its keys from awsCredentialExport in --settings, as Claude Code users set it."""
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"Credentials": {"AccessKeyId": KEYS[0], "SecretAccessKey": KEYS[1]}}))
    env = {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "eu-west-1", "ANTHROPIC_BEDROCK_BASE_URL": fake.base_url}
    return env, (json.dumps({"awsCredentialExport": f"cat {keys}"}),)


def _vertex(tmp_path: Path, fake: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    adc = tmp_path / "adc.json"
    adc.write_text(json.dumps(fake.credentials()))
    adc.chmod(stat.S_IRUSR | stat.S_IWUSR)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))  # google-auth reads the process's own
    return {"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "proj-1",
            "ANTHROPIC_VERTEX_BASE_URL": f"{fake.base_url}/v1"}  # fmt: skip


@pytest.mark.parametrize("wire", ["bedrock", "vertex", "foundry", "gateway"])
@pytest.mark.e2e
def test_doctor_says_each_stage_held_with_one_1_token_request_on_each_providers_wire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: str
) -> None:
    settings: tuple[str, ...] = ()
    fakes: dict[str, ProviderFake] = {
        "bedrock": FakeBedrock([reply("ok")], region="eu-west-1", accept=KEYS),
        "vertex": FakeVertex([reply("ok")], project="proj-1", region="us-east5"),
        "foundry": FakeFoundry([reply("ok")], key="foundry-key-0123456789"),
        "gateway": FakeGateway([reply("ok")], keys=("gw-key-0123456789",)),
    }
    with fakes[wire] as fake:
        if wire == "bedrock":
            env, settings = _bedrock(tmp_path, fake)
        elif wire == "vertex":
            env = _vertex(tmp_path, fake, monkeypatch)
        elif wire == "foundry":
            env = {"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_BASE_URL": f"{fake.base_url}/anthropic",
                   "ANTHROPIC_FOUNDRY_API_KEY": "foundry-key-0123456789"}  # fmt: skip
        else:
            env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_AUTH_TOKEN": "gw-key-0123456789"}
        report = doctor(tmp_path, env, settings=settings)
    assert report.exit_code == 0, report.lines
    assert checks(report) == ALL_HELD
    assert fake.refusals == [] and len(fake.requests) == 1
    assert fake.requests[0].body["max_tokens"] == 1  # the cheapest request the model takes
    assert "one request of 1 output token was sent (billed by the provider); --offline skips it" in report.lines
    if wire == "bedrock":
        assert report.lines[:3] == ["provider: Amazon Bedrock, eu-west-1", "model: eu.anthropic.claude-sonnet-5-5",
                                    "credentials: awsCredentialExport (--settings)"]  # fmt: skip
    assert KEYS[1] not in json.dumps(report.record) + "".join(report.lines)


def test_refused_credentials_fail_that_stage_naming_the_variable_and_exit_1_as_a_run_would(tmp_path: Path) -> None:
    with FakeGateway([reply("ok")], keys=("the-right-key-0123",)) as fake:
        report = doctor(tmp_path, {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "the-wrong-key-0123"})
    assert report.exit_code == 1
    reachable, credentials, model, streaming = checks(report)
    assert reachable == "ok   reachable" and (model, streaming) == ("--   model served", "--   streaming")
    assert (
        credentials.startswith("FAIL credentials accepted: API request failed: 401")
        and "ANTHROPIC_API_KEY" in credentials
    )
    assert "the-wrong-key" not in "".join(report.lines)
    assert report.record["checks"] == {"reachable": True, "credentials": False, "model": None, "streaming": None,
                                       "error": credentials.removeprefix("FAIL credentials accepted: ")}  # fmt: skip


def test_a_model_the_provider_does_not_serve_and_a_cut_stream_each_fail_their_own_stage(tmp_path: Path) -> None:
    script = [error(404, "not_found_error", "model: claude-nope"), cut("o")]
    with FakeGateway(script) as fake:
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "gw-key-0123456789"}
        missing = doctor(tmp_path, env, settings=('{"env": {"ANTHROPIC_MODEL": "claude-nope"}}',))
        broken = doctor(tmp_path, env)
    assert checks(missing)[:2] == ALL_HELD[:2] and checks(missing)[2].startswith("FAIL model served: ")
    assert "claude-nope" in checks(missing)[2] and "ANTHROPIC_MODEL" in checks(missing)[2]
    assert checks(broken)[:3] == ALL_HELD[:3] and checks(broken)[3].startswith("FAIL streaming: ")
    assert (missing.exit_code, broken.exit_code) == (1, 1)


def test_unreachable_names_the_endpoint_variable_and_a_missing_region_is_exit_2_before_any_request(
    tmp_path: Path,
) -> None:
    with FakeGateway([]) as closed:
        url = closed.base_url  # nothing listens there once it has stopped
    started = time.monotonic()
    gone = doctor(tmp_path, {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "gw-key-0123456789"})
    assert time.monotonic() - started < 30
    assert checks(gone)[0].startswith("FAIL reachable: ") and url in checks(gone)[0] and gone.exit_code == 1
    no_region = doctor(tmp_path, {"CLAUDE_CODE_USE_BEDROCK": "1"})
    assert no_region.exit_code == 2 and len(no_region.lines) == 1
    assert no_region.lines[0].startswith("FAIL configuration: ") and "AWS_REGION" in no_region.lines[0]


def test_offline_decides_everything_and_sends_nothing(tmp_path: Path) -> None:
    with FakeGateway([reply("ok")]) as fake:
        report = doctor(tmp_path, {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "k-0123456789"},
                        offline=True)  # fmt: skip
    assert fake.requests == [] and fake.paths == [] and report.exit_code == 0
    assert report.lines[-1].startswith("no request sent (--offline)")


@pytest.mark.e2e
@pytest.mark.slow
def test_the_doctor_command_checks_the_provider_then_lists_the_warm_interpreters(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)  # the warm interpreters' directory: private, as the listing requires
    with FakeGateway([reply("ok")], keys=("gw-key-0123456789",)) as fake:
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "gw-key-0123456789",
               "XDG_RUNTIME_DIR": str(runtime)}  # fmt: skip
        text = run_agent(tmp_path, ["doctor"], fake=None, env=env)
    assert text.code == 0, text.stderr
    assert text.stdout.startswith(f"provider: LLM gateway, {fake.base_url}\n")
    assert "\n".join(ALL_HELD) in text.stdout and "warm interpreters in " in text.stdout
    assert len(fake.requests) == 1 and fake.requests[0].body["max_tokens"] == 1


def test_doctor_names_both_credentials_when_both_are_sent_and_entra_id_for_foundry_without_a_key(
    tmp_path: Path,
) -> None:
    both = {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "ANTHROPIC_API_KEY": "k-0123456789",
        "ANTHROPIC_AUTH_TOKEN": "t-0123456789",
    }
    lines = doctor(tmp_path, both, offline=True).lines
    assert "credentials: ANTHROPIC_AUTH_TOKEN (Authorization: Bearer) and ANTHROPIC_API_KEY (X-Api-Key)" in lines
    entra = {"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "acme"}
    lines = doctor(tmp_path, entra, offline=True).lines
    assert "credentials: Microsoft Entra ID (azure-identity's DefaultAzureCredential)" in lines
