"""Claude Code's credential commands (apiKeyHelper, awsAuthRefresh, awsCredentialExport, gcpAuthRefresh) and ours
(SPROUT_AGENT_API_KEY_HELPER): which apply, under consent, and how they renew credentials before they expire and
after a refusal. In-process: real settings files, real shell commands, the real SDK against the fakes of each wire
(tests/fake_providers.py)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.config.credential_commands import Command, CredentialCommands, choose
from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.config.provider import Provider
from sprout_agent.core.errors import ApiError, MissingCredential
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.messages import Message, Text
from sprout_agent.core.protocols import ModelRequest
from sprout_agent.model.key_helper import aws_keys, run
from sprout_agent.session.prepared import prepare
from tests.bounds import bounded
from tests.fake_anthropic import reply
from tests.fake_providers import FakeBedrock
from tests.harness import pid_alive

OLD = ("ASIAOLDOLDOLDOLDOLD1", "old-secret-key-0123456789")
NEW = ("ASIANEWNEWNEWNEWNEW2", "new-secret-key-9876543210")
pytestmark = pytest.mark.anyio
REQUEST = ModelRequest("", (Message("user", (Text("hi"),)),))


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def prepared_in(tmp_path: Path, *, trust: bool = False, **env: str) -> Any:
    where = Locations(tmp_path / "config", tmp_path / "data" / "sessions", tmp_path / "data", None)
    base = {"HOME": str(tmp_path / "home"), "ANTHROPIC_BASE_URL": "https://llm.example.com"}
    return prepare(Options(prompt="hi", cwd=tmp_path / "repo", trust_project=trust), where, base | env)


def test_a_repositorys_api_key_helper_runs_nothing_before_consent_and_is_the_key_after_it(tmp_path: Path) -> None:
    write(tmp_path / "repo" / ".claude" / "settings.json", {"apiKeyHelper": "echo repo-key"})
    with pytest.raises(MissingCredential, match="ANTHROPIC_API_KEY is not set"):
        prepared_in(tmp_path)  # held back: no helper, so no key at all
    approved = prepared_in(tmp_path, trust=True)
    helper = approved.credentials.key_helper
    assert helper == Command("apiKeyHelper", "echo repo-key", str(tmp_path / "repo" / ".claude" / "settings.json"))


def test_your_own_settings_helper_applies_at_once_after_the_api_key_and_our_variable_wins_over_it(
    tmp_path: Path,
) -> None:
    write(tmp_path / "home" / ".claude" / "settings.json", {"apiKeyHelper": "vault read key"})
    assert prepared_in(tmp_path).credentials.key_helper.setting == "apiKeyHelper"
    assert prepared_in(tmp_path, ANTHROPIC_API_KEY="sk-x").credentials.key_helper is None  # as Claude Code orders
    ours = prepared_in(tmp_path, SPROUT_AGENT_API_KEY_HELPER="pass show llm").credentials.key_helper
    assert (ours.setting, ours.command) == ("SPROUT_AGENT_API_KEY_HELPER", "pass show llm")


def test_each_cloud_command_applies_only_to_its_provider() -> None:
    found = {key: (f"run {key}", "s.json") for key in ("apiKeyHelper", "awsAuthRefresh", "awsCredentialExport",
                                                        "gcpAuthRefresh")}  # fmt: skip
    bedrock = choose(found, {}, Provider("bedrock", "us-east-1"), key_present=False)
    assert (bedrock.key_helper, bedrock.gcp_refresh) == (None, None)
    assert bedrock.refresh == Command("awsAuthRefresh", "run awsAuthRefresh", "s.json")
    vertex = choose(found, {}, Provider("vertex", "us-east5"), key_present=False)
    assert vertex.refresh == Command("gcpAuthRefresh", "run gcpAuthRefresh", "s.json") and vertex.aws_export is None
    assert choose(found, {}, Provider(), key_present=False).refresh is None


@pytest.mark.e2e
def test_a_command_gets_the_secret_filtered_environment_and_its_failure_never_quotes_its_output(
    tmp_path: Path,
) -> None:
    env = {"PATH": os.environ["PATH"], "AWS_PROFILE": "work", "ANTHROPIC_API_KEY": "sk-ant-xyz0123456789",
           "AWS_SECRET_ACCESS_KEY": "hush-hush-0123456789"}  # fmt: skip
    printed = run(Command("apiKeyHelper", "env"), env)
    assert "AWS_PROFILE=work" in printed and "sk-ant" not in printed and "hush-hush" not in printed
    with pytest.raises(ApiError) as failed:
        run(Command("apiKeyHelper", "echo leaked-key-0123; echo also-this >&2; exit 3", "s.json"), env)
    assert str(failed.value) == "apiKeyHelper (s.json) failed (exit 3); run it yourself to see why"


@pytest.mark.e2e
def test_a_command_that_hangs_is_killed_with_its_children_after_its_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    hang = Command("awsCredentialExport", f"sleep 60 & echo $! > {pid_file}; wait")
    started = time.monotonic()
    with pytest.raises(ApiError, match=r"awsCredentialExport did not finish within 0\.3 s"):
        run(hang, {"PATH": os.environ["PATH"]}, timeout=0.3)
    assert time.monotonic() - started < bounded(5)
    child, deadline = int(pid_file.read_text()), time.monotonic() + bounded(5)
    while pid_alive(child) and time.monotonic() < deadline:  # SIGKILL is delivered, not awaited: poll, bounded
        time.sleep(0.01)
    assert not pid_alive(child)  # the whole group was killed, not only the shell


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.e2e
def test_aws_export_reads_claude_codes_json_and_the_aws_clis_with_their_expiry(tmp_path: Path) -> None:
    nested = {"Credentials": {"AccessKeyId": OLD[0], "SecretAccessKey": OLD[1], "SessionToken": "tok",
                              "Expiration": _iso(2_000_000_000)}}  # fmt: skip
    flat = {"Version": 1, "AccessKeyId": NEW[0], "SecretAccessKey": NEW[1]}
    env = {"PATH": os.environ["PATH"]}
    first = aws_keys(Command("awsCredentialExport", f"cat {write(tmp_path / 'a.json', nested)}"), env)
    assert (first.access_key, first.session_token, first.expires) == (OLD[0], "tok", 2_000_000_000)
    second = aws_keys(Command("awsCredentialExport", f"cat {write(tmp_path / 'b.json', flat)}"), env)
    assert (second.secret_key, second.expires) == (NEW[1], None)
    with pytest.raises(ApiError, match=r"must print JSON with Credentials\.AccessKeyId") as wrong:
        aws_keys(Command("awsCredentialExport", "echo not-json-secret"), env)
    assert "not-json-secret" not in str(wrong.value)


def _export_script(tmp_path: Path, expires: float) -> tuple[Path, Command]:
    """An export printing the keys in `keys.json` (a test, or the refresh command, rewrites it)."""
    keys = tmp_path / "keys.json"
    _set_keys(keys, OLD, expires)
    return keys, Command("awsCredentialExport", f"cat {keys}", "settings.json")


def _set_keys(path: Path, keys: tuple[str, str], expires: float) -> None:
    write(path, {"Credentials": {"AccessKeyId": keys[0], "SecretAccessKey": keys[1], "SessionToken": "t-" + keys[0],
                                 "Expiration": _iso(expires)}})  # fmt: skip


def _bedrock_model(
    fake: FakeBedrock, commands: CredentialCommands, events: list[Event], clock: Callable[[], float]
) -> Any:
    from sprout_agent.model.client import AnthropicModel
    from sprout_agent.model.credentials import Renewal

    provider = Provider("bedrock", fake.region, fake.base_url)
    renewal = Renewal(provider, commands, {"PATH": os.environ["PATH"]}, clock=clock)
    return AnthropicModel(model="us.anthropic.claude-haiku-4-5", max_tokens=100, emit=events.append, api_key=None,
                          base_url=None, provider=provider, credentials=renewal, retries=0)  # fmt: skip


@pytest.mark.e2e
async def test_aws_keys_from_the_export_are_fetched_again_before_they_expire_with_no_request_refused(
    tmp_path: Path,
) -> None:
    now = [1_000_000.0]
    keys, export = _export_script(tmp_path, expires=now[0] + 3600)
    events: list[Event] = []
    with FakeBedrock([reply("one"), reply("two"), reply("three")], region="us-east-1", accept=OLD) as fake:
        model = _bedrock_model(fake, CredentialCommands(aws_export=export), events, lambda: now[0])
        try:
            with anyio.fail_after(bounded(20)):
                await model.complete(REQUEST, lambda _: None)
                _set_keys(keys, NEW, now[0] + 7200)  # what the export prints from now on
                await model.complete(REQUEST, lambda _: None)  # the old keys have an hour left: kept
                now[0] += 3600 - 200  # 200 s before they expire: the export runs before the request
                fake.accept = NEW
                await model.complete(REQUEST, lambda _: None)
        finally:
            await model.aclose()
    assert fake.refusals == []  # fetched before the request, not after a refusal
    signed_by = [r.headers["authorization"].split("Credential=")[1][:20] for r in fake.requests]
    assert signed_by == [OLD[0], OLD[0], NEW[0]]
    assert [r.headers["x-amz-security-token"] for r in fake.requests][-1] == "t-" + NEW[0]


@pytest.mark.e2e
async def test_after_a_403_aws_auth_refresh_runs_then_the_export_is_read_again_and_the_turn_goes_on(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    keys, export = _export_script(tmp_path, expires=time.time() + 3600)
    new_keys = write(
        tmp_path / "new.json", json.loads(keys.read_text().replace(OLD[0], NEW[0]).replace(OLD[1], NEW[1]))
    )
    login = Command("awsAuthRefresh", f"echo 'open https://device.sso/ABCD'; cp {new_keys} {keys}", "settings.json")

    events: list[Event] = []
    with FakeBedrock([reply("first"), reply("done")], region="us-east-1", accept=OLD) as fake:
        model = _bedrock_model(fake, CredentialCommands(aws_refresh=login, aws_export=export), events, time.time)
        try:
            with anyio.fail_after(bounded(20)):
                await model.complete(REQUEST, lambda _: None)
                fake.accept = NEW  # as after an SSO session ended: the old keys are no longer taken
                answer = await model.complete(REQUEST, lambda _: None)
        finally:
            await model.aclose()
    assert answer.stop_reason == "end_turn"
    assert [status for status, _ in fake.refusals] == [403]
    assert any(isinstance(e, Notice) and "renewed them" in e.text for e in events)
    shown = capfd.readouterr()
    assert "https://device.sso/ABCD" in shown.err and "device.sso" not in shown.out  # a login's code, to you
    assert not any(NEW[1] in str(e) or OLD[1] in str(e) for e in events)


def test_acp_authenticate_counts_an_api_key_helper_in_your_own_settings(tmp_path: Path) -> None:
    """authenticate comes before any session: with no key in the environment, an editor was told "Authentication
    required" although the apiKeyHelper of ~/.claude/settings.json would have served session/new."""
    from sprout_agent.faces.acp.auth import AUTH_REQUIRED, authenticate
    from sprout_agent.faces.acp.wire import RpcError

    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    environ = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    with pytest.raises(RpcError) as refused:
        authenticate({"methodId": "environment"}, environ, Locations.nowhere())
    assert refused.value.code == AUTH_REQUIRED
    (home / ".claude" / "settings.json").write_text(json.dumps({"apiKeyHelper": "echo sk-ant-from-the-helper"}))
    assert authenticate({"methodId": "environment"}, environ, Locations.nowhere()) == {}
