"""The real CLI against fakes that speak each provider's wire (tests/fake_providers.py), through the SDK's own
Bedrock, Vertex and Foundry clients: a tool round on each, credentials that stop being taken mid-session renewed
without losing the turn, a gateway that refuses a beta, Claude Code's variables unchanged."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.bounds import bounded
from tests.claude_code import CLAUDE, claude_env, needs_claude
from tests.fake_anthropic import FakeAnthropic, Json, reply, thinking, tool_use
from tests.fake_providers import FakeBedrock, FakeFoundry, FakeGateway, FakeVertex
from tests.harness import agent_command, agent_env, fake_server, run_agent, tool_results

pytestmark = pytest.mark.e2e

OLD_KEYS = ("AKIAOLDOLDOLDOLDOLD1", "old-secret-key-0123456789")
NEW_KEYS = ("AKIANEWNEWNEWNEWNEW2", "new-secret-key-9876543210")
SERVERS = {"up": fake_server(tools="echo")}


def _tool_round(then: str = "done") -> list[Any]:
    return [reply(tool_use("up__echo", {"text": "ping"})), reply(then)]


def _stream_json(out: str) -> list[Json]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _aws_profile(home: Path, keys: tuple[str, str]) -> Path:
    """A shared credentials file with one profile, as `aws configure` (or an SSO login's export) writes it."""
    path = home / "aws-credentials"
    path.write_text(f"[work]\naws_access_key_id = {keys[0]}\naws_secret_access_key = {keys[1]}\n")
    return path


def test_bedrock_runs_a_tool_round_signed_with_sigv4_on_the_sonnet_inference_profile(tmp_path: Path) -> None:
    with FakeBedrock(_tool_round(), region="eu-west-1", accept=OLD_KEYS) as fake:
        env = {
            "CLAUDE_CODE_USE_BEDROCK": "1",
            "AWS_REGION": "eu-west-1",
            "ANTHROPIC_BEDROCK_BASE_URL": fake.base_url,
            "AWS_SHARED_CREDENTIALS_FILE": str(_aws_profile(tmp_path, OLD_KEYS)),
            "AWS_PROFILE": "work",
            "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        }
        args = ["-p", "echo ping", "--model", "sonnet", "--output-format", "stream-json", "--verbose"]
        run = run_agent(tmp_path, args, fake=None, servers=SERVERS, env=env)
    assert run.code == 0, run.stderr
    assert fake.refusals == []
    assert fake.paths == ["/model/eu.anthropic.claude-sonnet-5-5/invoke-with-response-stream"] * 2
    first, second = fake.requests
    assert first.body["system"][0]["cache_control"] == {"type": "ephemeral"}  # caching asked for, as first party
    assert [r["content"][0]["text"] for r in tool_results(second.body)] == ["ping"]
    lines = _stream_json(run.stdout)
    init = lines[0]
    assert init["provider"] == {"kind": "bedrock", "name": "Amazon Bedrock", "region": "eu-west-1",
                                "endpoint": fake.base_url}  # fmt: skip
    assert init["model"] == "eu.anthropic.claude-sonnet-5-5"
    assert lines[-1]["result"] == "done" and lines[-1]["total_cost_usd"] > 0  # priced as Sonnet


def test_bedrock_credentials_replaced_mid_session_are_read_again_after_the_403_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    profile = _aws_profile(tmp_path, OLD_KEYS)

    def rotate(body: Json) -> Any:
        """As `aws sso login` in another terminal: new keys on disk, the old ones no longer taken."""
        _aws_profile(tmp_path, NEW_KEYS)
        fake.accept = NEW_KEYS
        return reply(tool_use("up__echo", {"text": "ping"}))

    with FakeBedrock([rotate, reply("done")], region="us-east-1", accept=OLD_KEYS) as fake:
        env = {
            "CLAUDE_CODE_USE_BEDROCK": "1",
            "AWS_REGION": "us-east-1",
            "ANTHROPIC_BEDROCK_BASE_URL": fake.base_url,
            "AWS_SHARED_CREDENTIALS_FILE": str(profile),
            "AWS_PROFILE": "work",
            "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        }
        run = run_agent(tmp_path, ["-p", "echo ping", "--model", "haiku"], fake=None, servers=SERVERS, env=env)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "done"
    assert [status for status, _ in fake.refusals] == [403]  # once, then signed with the new keys
    assert "Amazon Bedrock refused the credentials: renewed them" in run.stderr
    assert len(fake.requests) == 2


def test_a_missing_bedrock_region_is_one_line_naming_aws_region_and_exit_2(tmp_path: Path) -> None:
    run = run_agent(tmp_path, ["-p", "hi"], fake=None, env={"CLAUDE_CODE_USE_BEDROCK": "1"})
    assert run.code == 2
    assert "AWS_REGION" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def _vertex_env(tmp_path: Path, fake: FakeVertex) -> dict[str, str]:
    adc = tmp_path / "adc.json"
    adc.write_text(json.dumps(fake.credentials()))
    adc.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return {
        "CLAUDE_CODE_USE_VERTEX": "1",
        "CLOUD_ML_REGION": "us-east5",
        "ANTHROPIC_VERTEX_PROJECT_ID": "proj-1",
        "ANTHROPIC_VERTEX_BASE_URL": f"{fake.base_url}/v1",
        "GOOGLE_APPLICATION_CREDENTIALS": str(adc),
    }


def test_vertex_runs_a_tool_round_with_a_google_token_and_the_vertex_anthropic_version(tmp_path: Path) -> None:
    with FakeVertex(_tool_round(), project="proj-1", region="us-east5") as fake:
        run = run_agent(tmp_path, ["-p", "echo ping", "--model", "claude-sonnet-4-5"], fake=None, servers=SERVERS,
                        env=_vertex_env(tmp_path, fake))  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "done" and fake.refusals == []
    model_path = "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"
    assert fake.paths == ["/token", f"{model_path}:streamRawPredict", f"{model_path}:streamRawPredict"]
    assert all(token.startswith("ya29.fake-") for token in fake.tokens_used)


def test_a_vertex_token_revoked_mid_session_is_fetched_again_after_the_401_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    def revoke(body: Json) -> Any:
        fake.expire_all()
        return reply(tool_use("up__echo", {"text": "ping"}))

    with FakeVertex([revoke, reply("done")], project="proj-1", region="us-east5") as fake:
        run = run_agent(tmp_path, ["-p", "echo ping"], fake=None, servers=SERVERS, env=_vertex_env(tmp_path, fake))
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "done"
    assert [status for status, _ in fake.refusals] == [401]
    assert [p for p in fake.paths if p == "/token"] == ["/token", "/token"]
    assert "Google Vertex AI refused the credentials: renewed them" in run.stderr


def test_foundry_runs_a_tool_round_with_its_key_in_both_headers(tmp_path: Path) -> None:
    with FakeFoundry(_tool_round(), key="foundry-key-0123456789") as fake:
        env = {
            "CLAUDE_CODE_USE_FOUNDRY": "1",
            "ANTHROPIC_FOUNDRY_BASE_URL": f"{fake.base_url}/anthropic",
            "ANTHROPIC_FOUNDRY_API_KEY": "foundry-key-0123456789",
        }
        run = run_agent(tmp_path, ["-p", "echo ping", "--model", "opus"], fake=None, servers=SERVERS, env=env)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "done" and fake.refusals == []
    assert fake.paths == ["/anthropic/v1/messages"] * 2
    assert [r.body["model"] for r in fake.requests] == ["claude-opus-5-5"] * 2


def _thinking_round() -> list[Any]:
    return [reply(thinking("use the tool"), tool_use("up__echo", {"text": "ping"})), reply("done")]


def test_a_gateway_that_refuses_the_beta_gets_the_request_again_without_it_and_never_again(tmp_path: Path) -> None:
    with FakeGateway(_thinking_round()) as fake:
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "SPROUT_AGENT_THINKING": "on"}
        run = run_agent(tmp_path, ["-p", "echo ping"], fake=None, servers=SERVERS, env=env)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "done"
    assert [status for status, _ in fake.refusals] == [400]  # once: the retry and the next round carry none
    assert [r.headers.get("anthropic-beta") for r in fake.requests] == [None, None]
    assert all(r.body["thinking"]["type"] == "enabled" for r in fake.requests)  # thinking kept, its beta dropped
    assert "LLM gateway refused the beta interleaved-thinking-2025-05-14" in run.stderr


def test_disable_experimental_betas_sends_no_beta_header_at_all(tmp_path: Path) -> None:
    with FakeGateway(_thinking_round()) as fake:
        env = {
            "ANTHROPIC_BASE_URL": fake.base_url,
            "SPROUT_AGENT_THINKING": "on",
            "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1",
        }
        run = run_agent(tmp_path, ["-p", "echo ping"], fake=None, servers=SERVERS, env=env)
    assert run.code == 0, run.stderr
    assert fake.refusals == [] and all("anthropic-beta" not in p for p in fake.paths)
    assert [r.headers.get("anthropic-beta") for r in fake.requests] == [None, None]


def test_a_key_helpers_key_is_fetched_again_after_a_401_and_never_reaches_the_servers(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    counter.write_text("1")
    helper = tmp_path / "helper.sh"
    helper.write_text(f'#!/bin/sh\nn=$(cat "{counter}")\necho $((n + 1)) > "{counter}"\necho "gw-key-$n-abcdefgh"\n')
    helper.chmod(0o700)
    servers = {"up": fake_server(tools="env")}
    script = [reply(tool_use("up__env", {"name": "SPROUT_AGENT_API_KEY_HELPER"})), reply("done")]
    with FakeGateway(script, keys=("gw-key-2-abcdefgh",)) as fake:
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "SPROUT_AGENT_API_KEY_HELPER": str(helper)}
        run = run_agent(tmp_path, ["-p", "what is in your env"], fake=None, servers=servers, env=env)
    assert run.code == 0, run.stderr
    assert [status for status, _ in fake.refusals] == [401]
    assert [r.headers["authorization"] for r in fake.requests] == ["Bearer gw-key-2-abcdefgh"] * 2
    assert "gw-key" not in run.stderr and "gw-key" not in run.stdout
    (seen,) = tool_results(fake.requests[1].body)  # the server's own environment has no helper (nor its key)
    assert seen["content"][0]["text"] == "<unset>"


def test_foundry_without_a_key_signs_in_with_entra_id_and_a_revoked_token_is_fetched_anew_after_the_401(
    tmp_path: Path,
) -> None:
    """Claude Code's Entra ID sign-in: azure-identity's DefaultAzureCredential, here an App Service managed identity
    (IDENTITY_ENDPOINT, IDENTITY_HEADER) whose endpoint is the fake's; its secret header never reaches a server."""

    def revoke(body: Json) -> Any:
        fake.expire_all()  # a token revoked (or past its hour) mid-session
        return reply(tool_use("up__env", {"name": "IDENTITY_HEADER"}))

    with FakeFoundry([revoke, reply("done")]) as fake:
        env = {"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_BASE_URL": f"{fake.base_url}/anthropic",
               **fake.identity_env()}  # fmt: skip
        servers = {"up": fake_server(tools="env")}
        run = run_agent(tmp_path, ["-p", "what is in your env"], fake=None, servers=servers, env=env)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "done"
    assert [status for status, _ in fake.refusals] == [401]  # the revoked token, once
    assert fake.paths == ["/msi/token", "/anthropic/v1/messages", "/anthropic/v1/messages", "/msi/token",
                          "/anthropic/v1/messages"]  # fmt: skip
    first, revoked, fresh = fake.tokens_used
    assert first == revoked != fresh and fresh.startswith("eyJ0eXAiOiJKV1QifQ.fake-entra-")
    assert "Microsoft Foundry refused the credentials: renewed them" in run.stderr
    (seen,) = tool_results(fake.requests[1].body)
    assert seen["content"][0]["text"] == "<unset>"
    assert fake.identity_header not in run.stdout + run.stderr


@needs_claude
@pytest.mark.slow
def test_with_both_an_api_key_and_an_auth_token_we_send_the_headers_claude_code_sends(tmp_path: Path) -> None:
    """The real Claude Code (tests/claude_code.py) and we, each given both on the fake API: the same auth headers."""
    both = {"ANTHROPIC_API_KEY": "sk-ant-both-key-0123456789", "ANTHROPIC_AUTH_TOKEN": "both-token-0123456789"}
    sent: list[dict[str, str]] = []
    for side in ("claude", "ours"):
        with FakeAnthropic([reply("hi")] * 4) as fake:
            if side == "claude":
                env = claude_env(tmp_path, fake) | both
                subprocess.run([str(CLAUDE), "-p", "hi"], env=env, cwd=tmp_path, capture_output=True,
                               timeout=bounded(120), check=False)  # fmt: skip
            else:
                run_agent(tmp_path, ["-p", "hi"], fake=fake, env=both)
        auth = fake.requests[0].headers
        sent.append({name: auth[name] for name in ("authorization", "x-api-key") if name in auth})
    claude, ours = sent
    assert claude == {"authorization": "Bearer both-token-0123456789", "x-api-key": "sk-ant-both-key-0123456789"}
    assert ours == claude


def wire_for(wire: str, script: list[Any], tmp_path: Path) -> tuple[Any, Any]:
    """The fake of `wire` and a function giving the CLI's environment for it once it listens."""
    if wire == "bedrock":
        fake: Any = FakeBedrock(script, region="eu-west-1", accept=OLD_KEYS)
        return fake, lambda: {
            "CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "eu-west-1", "ANTHROPIC_BEDROCK_BASE_URL": fake.base_url,
            "AWS_SHARED_CREDENTIALS_FILE": str(_aws_profile(tmp_path, OLD_KEYS)), "AWS_PROFILE": "work",
            "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        }  # fmt: skip
    if wire == "vertex":
        fake = FakeVertex(script, project="proj-1", region="us-east5")
        return fake, lambda: _vertex_env(tmp_path, fake)
    if wire == "foundry":
        fake = FakeFoundry(script, key="foundry-key-0123456789")
        return fake, lambda: {
            "CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_BASE_URL": f"{fake.base_url}/anthropic",
            "ANTHROPIC_FOUNDRY_API_KEY": "foundry-key-0123456789",
        }  # fmt: skip
    fake = FakeGateway(script, keys=("gw-key-0123456789",))  # refuses any beta: none is sent unasked
    return fake, lambda: {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_AUTH_TOKEN": "gw-key-0123456789"}


HAIKU = {"bedrock": "eu.anthropic.claude-haiku-5-5", "vertex": "claude-haiku-5-5", "foundry": "claude-haiku-5-5",
         "gateway": "claude-haiku-5-5"}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("wire", ["bedrock", "vertex", "foundry", "gateway"])
def test_on_each_provider_a_subagent_runs_on_its_cheaper_model_and_the_conversation_compacts(
    tmp_path: Path, wire: str
) -> None:
    """One run per provider's wire: the Explore subagent on the provider's Haiku id, then a compaction (a small
    window), then the answer; every request taken, the ledger priced, the provider named."""
    (tmp_path / "cli.py").write_text("def main():\n    parse('--json')\n")
    task = {"description": "find the flag", "prompt": "Where is --json handled?", "subagent_type": "Explore"}
    script = [
        reply(tool_use("agent__task", task, id="toolu_task"), usage={"input_tokens": 7000, "output_tokens": 300}),
        reply("--json is handled in cli.py:2"),
        reply("## Summary\\nThe flag is in cli.py."),
        reply("It is in cli.py.", usage={"input_tokens": 900}),
    ]
    fake, env_of = wire_for(wire, script, tmp_path)
    with fake:
        env = env_of() | {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo,agent", "SPROUT_AGENT_MAX_CONTEXT_TOKENS": "10000",
                          "SPROUT_AGENT_MAX_OUTPUT_TOKENS": "1000"}  # fmt: skip
        args = ["-p", "where is --json handled?", "--model", "sonnet", "--output-format", "stream-json", "--verbose"]
        run = run_agent(tmp_path, args, fake=None, env=env)
    assert run.code == 0, run.stderr
    assert fake.refusals == []
    parent, child, summary, after = (r.body for r in fake.requests)
    assert child["model"] == HAIKU[wire] and parent["model"] != child["model"]
    assert "tools" not in summary and after["model"] == parent["model"]  # the session's model summarised
    out = _stream_json(run.stdout)
    (compacted,) = [line for line in out if line.get("subtype") == "compaction_finished"]
    assert compacted["ok"] is True
    assert out[0]["provider"]["kind"] == ("anthropic" if wire == "gateway" else wire)
    assert out[-1]["result"] == "It is in cli.py." and out[-1]["total_cost_usd"] > 0
    if wire == "bedrock":  # the model is in the path: the child's request went to the Haiku profile
        assert fake.paths[1] == f"/model/{HAIKU[wire]}/invoke-with-response-stream"


@pytest.mark.slow
@pytest.mark.parametrize("wire", ["bedrock", "vertex", "foundry", "gateway"])
def test_a_batch_task_runs_on_each_provider_with_the_providers_model_id_and_its_price(
    tmp_path: Path, wire: str
) -> None:
    """`sprout-agent batch`: each task's agent inherits your provider (a task's `env` may not choose one)."""
    (tmp_path / "tasks.jsonl").write_text(json.dumps({"id": "one", "prompt": "do it"}) + "\n")
    fake, env_of = wire_for(wire, [reply("all done", usage={"input_tokens": 1000, "output_tokens": 100})], tmp_path)
    with fake:
        env = agent_env(tmp_path, None, env_of())
        run = subprocess.run(agent_command(["batch", "tasks.jsonl", "--out", "out", "-j", "1", "--model", "haiku"]),
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=bounded(120))  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert fake.refusals == [] and [r.body["model"] for r in fake.requests] == [HAIKU[wire]]
    (record,) = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert (record["status"], record["result"]) == ("ok", "all done")
    assert record["cost_usd"] == pytest.approx(0.0015)  # 1000 in, 100 out at Haiku's price, on every provider
