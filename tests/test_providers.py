"""The provider rules in-process: Claude Code's variables choose the provider, each error names the variable to fix,
model ids as each provider spells them (and back, for prices and windows), what a provider lacks, the variables a
repository may not set, and the clouds' credentials kept from children and texts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout_agent.config.dotenv_file import read_dotenv
from sprout_agent.config.guarded_env import refused_because, task_refused_because
from sprout_agent.config.provider import Provider, choose, missing_extra, native_model
from sprout_agent.config.settings import child_environment, provider_model
from sprout_agent.core.compaction import context_window
from sprout_agent.core.errors import UsageError
from sprout_agent.core.ledger import price_for
from sprout_agent.core.model_names import canonical
from sprout_agent.model.api_errors import Failure, explain
from sprout_agent.model.facts import fallback
from sprout_agent.trust.secrets import is_secret, redactor
from tests.fake_anthropic import reply

BEDROCK = Provider("bedrock", "us-east-1")
VERTEX = Provider("vertex", "us-east5", project="proj-1")


def test_claude_codes_variables_choose_the_provider_and_its_place() -> None:
    assert choose({}) == Provider()
    assert choose({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "eu-west-1"}).describe() == "Amazon Bedrock, eu-west-1"
    vertex = choose({"CLAUDE_CODE_USE_VERTEX": "true", "CLOUD_ML_REGION": "global", "GOOGLE_CLOUD_PROJECT": "p"})
    assert (vertex.kind, vertex.region, vertex.project) == ("vertex", "global", "p")
    foundry = choose(
        {"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "acme", "ANTHROPIC_FOUNDRY_API_KEY": "k"}
    )
    assert foundry.describe() == "Microsoft Foundry, acme"
    gateway = choose({"ANTHROPIC_BASE_URL": "https://llm.example.com"})
    assert gateway.gateway and gateway.name == "LLM gateway"
    assert not choose({"ANTHROPIC_BASE_URL": "https://api.anthropic.com/"}).gateway


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CLAUDE_CODE_USE_BEDROCK": "1"}, "AWS_REGION"),
        ({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us east"}, "AWS_REGION"),
        ({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1", "ANTHROPIC_BEDROCK_BASE_URL": "ftp://x"},
         "ANTHROPIC_BEDROCK_BASE_URL"),
        ({"CLAUDE_CODE_USE_VERTEX": "1"}, "CLOUD_ML_REGION"),
        ({"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "a/../b"},
         "ANTHROPIC_VERTEX_PROJECT_ID"),
        ({"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "x", "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1"},
         "ANTHROPIC_VERTEX_PROJECT_ID"),
        ({"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_API_KEY": "k"}, "ANTHROPIC_FOUNDRY_RESOURCE"),
        ({"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "evil.com/x", "ANTHROPIC_FOUNDRY_API_KEY": "k"},
         "ANTHROPIC_FOUNDRY_RESOURCE"),
        ({"CLAUDE_CODE_USE_BEDROCK": "1", "CLAUDE_CODE_USE_VERTEX": "1"}, "CLAUDE_CODE_USE_VERTEX"),
    ],
)  # fmt: skip
def test_a_missing_or_malformed_provider_variable_is_a_usage_error_naming_it(env: dict[str, str], named: str) -> None:
    with pytest.raises(UsageError, match=named):
        choose(env)


def test_aliases_and_first_party_ids_become_each_providers_ids() -> None:
    env: dict[str, str] = {}
    assert provider_model("sonnet", env, BEDROCK) == "us.anthropic.claude-sonnet-5-5"
    assert provider_model("haiku", env, Provider("bedrock", "eu-central-1")) == "eu.anthropic.claude-haiku-5-5"
    assert native_model("claude-sonnet-4-5", BEDROCK) == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert native_model("claude-haiku-4-5-20251001", Provider("bedrock", "ap-northeast-1")) == (
        "apac.anthropic.claude-haiku-4-5-20251001-v1:0"
    )
    assert native_model("claude-opus-4-5", Provider("bedrock", "ca-central-1")).startswith("global.anthropic.")
    assert native_model("claude-sonnet-4-5", VERTEX) == "claude-sonnet-4-5@20250929"
    assert provider_model("opus", env, VERTEX) == "claude-opus-5-5"
    # Claude Code's variables win over our defaults, and a provider's own id is sent as given.
    assert provider_model("opus", {"ANTHROPIC_DEFAULT_OPUS_MODEL": "arn:aws:bedrock:x"}, BEDROCK) == "arn:aws:bedrock:x"
    assert native_model("us.anthropic.claude-opus-4-7", BEDROCK) == "us.anthropic.claude-opus-4-7"
    assert native_model("claude-sonnet-4-5", Provider()) == "claude-sonnet-4-5"


@pytest.mark.parametrize(
    "model",
    ["us.anthropic.claude-opus-4-5-20251101-v1:0", "claude-opus-4-5@20251101", "global.anthropic.claude-opus-4-5"],
)
def test_a_providers_id_is_priced_and_sized_as_its_model(model: str) -> None:
    assert canonical(model).startswith("claude-opus-4-5")
    assert price_for(model, {}) == price_for("claude-opus-4-5", {})
    assert fallback(model).max_output == 64_000 and fallback(model).model == model
    assert context_window(model, None) == context_window("claude-opus-4-5", None)


def test_vertex_takes_a_models_own_region_from_claude_codes_variable() -> None:
    env = {
        "CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "global", "ANTHROPIC_VERTEX_PROJECT_ID": "p",
        "VERTEX_REGION_CLAUDE_HAIKU_4_5": "us-east5",
    }  # fmt: skip
    provider = choose(env)
    assert provider.region_for("claude-haiku-4-5@20251001") == "us-east5"
    assert provider.region_for("claude-sonnet-4-5@20250929") == "global"


def test_what_a_provider_lacks_comes_from_the_one_table() -> None:
    assert not BEDROCK.features.count_tokens and not BEDROCK.features.web_search
    assert VERTEX.features.web_search and not VERTEX.features.web_fetch
    assert Provider().allows_beta("anything-2099-01-01")  # the first party (and a gateway, until it refuses one)
    assert BEDROCK.allows_beta("interleaved-thinking-2025-05-14") and not BEDROCK.allows_beta("other-2026-01-01")
    assert not choose({"CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1"}).allows_beta("interleaved-thinking-2025-05-14")


def test_a_missing_cloud_extra_is_one_line_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "botocore", None)  # as if not installed (find_spec raises for a None entry)
    monkeypatch.setitem(sys.modules, "azure.identity", None)
    line = missing_extra(BEDROCK)
    assert line is not None and "pip install 'sprout-agent[bedrock]'" in line and "\n" not in line
    entra = choose({"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "acme"})
    line = missing_extra(entra)
    assert line is not None and "pip install 'sprout-agent[foundry]'" in line and "ANTHROPIC_FOUNDRY_API_KEY" in line
    keyed = choose(
        {"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "acme", "ANTHROPIC_FOUNDRY_API_KEY": "k"}
    )
    assert missing_extra(Provider()) is None and missing_extra(keyed) is None  # a key needs no cloud SDK


def test_foundry_signs_in_as_claude_code_does_key_then_token_then_none_then_entra_id() -> None:
    base = {"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "acme"}
    assert choose(base).entra and not choose(base).skip_auth
    assert not choose(base | {"ANTHROPIC_FOUNDRY_API_KEY": "k"}).entra
    assert not choose(base | {"ANTHROPIC_FOUNDRY_AUTH_TOKEN": "t"}).entra
    skipped = choose(base | {"CLAUDE_CODE_SKIP_FOUNDRY_AUTH": "1"})
    assert skipped.skip_auth and not skipped.entra


def test_a_repositorys_env_cannot_choose_the_provider_region_endpoint_credentials_or_key_helper(tmp_path: Path) -> None:
    names = [
        "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY", "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
        "AWS_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_BEARER_TOKEN_BEDROCK",
        "ANTHROPIC_BEDROCK_BASE_URL", "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID",
        "VERTEX_REGION_CLAUDE_HAIKU_4_5", "GOOGLE_APPLICATION_CREDENTIALS", "ANTHROPIC_FOUNDRY_RESOURCE",
        "ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_FOUNDRY_AUTH_TOKEN", "CLAUDE_CODE_SKIP_FOUNDRY_AUTH", "AZURE_CLIENT_ID",
        "AZURE_AUTHORITY_HOST", "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT",
        "ANTHROPIC_CUSTOM_HEADERS", "SPROUT_AGENT_API_KEY_HELPER", "CLAUDE_CODE_API_KEY_HELPER_TTL_MS",
    ]  # fmt: skip
    (tmp_path / ".env").write_text("".join(f"{name}=from-the-repo\n" for name in names))
    assert read_dotenv(tmp_path).values == {}
    assert all(refused_because(name) and task_refused_because(name) for name in names)


def test_aws_google_and_azure_credentials_never_reach_mcp_children_and_are_redacted_from_texts() -> None:
    parent = {
        "PATH": "/usr/bin", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t", "AWS_BEARER_TOKEN_BEDROCK": "b",
        "GOOGLE_APPLICATION_CREDENTIALS": "/k.json", "ANTHROPIC_FOUNDRY_API_KEY": "f",
        "SPROUT_AGENT_API_KEY_HELPER": "c", "LANG": "ASIAABCDEFGHIJKLMNOP", "AZURE_CLIENT_SECRET": "z",
        "IDENTITY_HEADER": "managed-identity-secret", "MSI_SECRET": "m", "ANTHROPIC_FOUNDRY_AUTH_TOKEN": "e",
    }  # fmt: skip
    assert child_environment(parent, {}) == {"PATH": "/usr/bin"}
    for name in (
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "CLOUDSDK_AUTH_ACCESS_TOKEN",
        "IDENTITY_HEADER",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    ):
        assert is_secret(name, "x")
    text = "ASIAABCDEFGHIJKLMNOP ya29.a0AfH6SMBx-y_z ABSKQmVkcm9ja0FQSUtleS1hYmM= bedrock-api-key-YmVkcm9jaw=="
    assert redactor({})(text) == " ".join(["[redacted]"] * 4)


@pytest.mark.parametrize(
    ("provider", "status", "kind", "named"),
    [
        (BEDROCK, 403, "permission_error", "AWS_REGION=us-east-1"),
        (BEDROCK, 404, "ResourceNotFoundException", "ANTHROPIC_MODEL"),
        (BEDROCK, None, "credentials", "AWS_PROFILE"),
        (VERTEX, 401, "authentication_error", "GOOGLE_APPLICATION_CREDENTIALS"),
        (VERTEX, 404, "not_found_error", "CLOUD_ML_REGION=us-east5"),
        (Provider("foundry", resource="acme"), 401, "", "ANTHROPIC_FOUNDRY_API_KEY"),
    ],
)
def test_a_providers_failure_names_the_variable_to_fix(
    provider: Provider, status: int | None, kind: str, named: str
) -> None:
    line = explain(Failure(status, kind, "denied", 1, "m", provider.base_url, provider))
    assert named in line and provider.describe() in line and "\n" not in line


@pytest.mark.e2e
@pytest.mark.slow
def test_the_first_partys_client_imports_no_cloud_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from sprout_agent.model.client import AnthropicModel\n"
        "AnthropicModel(model='claude-sonnet-5-5', max_tokens=1, emit=print, api_key='k', base_url=None)\n"
        "clouds = ('boto3', 'botocore', 'google.auth', 'azure')  # `import anthropic` loads its lib.bedrock itself\n"
        "print(sorted(m for m in sys.modules if m.startswith(clouds)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.e2e  # azure-identity's import runs `uname` (platform.processor) to describe the machine
def test_an_entra_id_token_is_fetched_again_before_it_expires_and_from_a_new_credential_after_renew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import anyio

    from sprout_agent.model.entra import EntraToken
    from tests.fake_providers import FakeFoundry

    with FakeFoundry([]) as fake:
        for name, value in fake.identity_env().items():
            monkeypatch.setenv(name, value)  # azure-identity reads the process's own environment
        for name in ("AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE"):
            monkeypatch.delenv(name, raising=False)
        source = EntraToken()

        async def tokens() -> list[str]:
            with anyio.fail_after(30):
                got = [await source(), await source()]  # an hour's token: the one held is sent again
                fake.tokens_valid_for = 240.0  # under five minutes left: not sent, fetched anew each time
                source.renew()
                return [*got, await source(), await source()]

        first, again, short, fresh = anyio.run(tokens)
    assert first == again and len({first, short, fresh}) == 3
    assert fake.paths == ["/msi/token"] * 3


@pytest.mark.parametrize(
    ("env", "helper_key", "sent"),
    [
        ({"ANTHROPIC_API_KEY": "sk-key-1234", "ANTHROPIC_AUTH_TOKEN": "tok-5678"}, None,
         {"authorization": "Bearer tok-5678", "x-api-key": "sk-key-1234"}),
        ({"ANTHROPIC_AUTH_TOKEN": "tok-5678"}, None, {"authorization": "Bearer tok-5678"}),
        ({"ANTHROPIC_API_KEY": "sk-key-1234"}, None, {"authorization": "Bearer sk-key-1234"}),
        ({"ANTHROPIC_API_KEY": "sk-key-1234", "ANTHROPIC_AUTH_TOKEN": "tok-5678"}, "helper-key-90",
         {"authorization": "Bearer helper-key-90"}),
    ],
)  # fmt: skip
def test_with_both_an_api_key_and_an_auth_token_set_both_are_sent_as_claude_code_sends_them(
    env: dict[str, str], helper_key: str | None, sent: dict[str, str]
) -> None:
    """Claude Code's binary, given both (tests/test_providers_e2e.py compares it): `Authorization: Bearer` the token,
    `X-Api-Key` the key. A key helper's key wins over both and goes alone."""
    import anyio

    from sprout_agent.core.messages import Message, Text
    from sprout_agent.core.protocols import ModelRequest
    from sprout_agent.model.client import AnthropicModel
    from tests.fake_providers import FakeGateway

    async def one_request(base_url: str) -> None:
        provider = Provider(base_url=base_url)
        key = helper_key or env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN")
        model = AnthropicModel(model="claude-haiku-4-5", max_tokens=10, emit=lambda _: None, api_key=key,
                               base_url=base_url, provider=provider, env=env, retries=0)  # fmt: skip
        try:
            with anyio.fail_after(20):
                await model.complete(ModelRequest("", (Message("user", (Text("hi"),)),)), lambda _: None)
        finally:
            await model.aclose()

    with FakeGateway([reply("hi")]) as fake:
        anyio.run(one_request, fake.base_url)
    (request,) = fake.requests
    assert {k: v for k, v in request.headers.items() if k in ("authorization", "x-api-key")} == sent


@pytest.mark.parametrize(
    ("provider", "haiku"),
    [(BEDROCK, "us.anthropic.claude-haiku-5-5"), (Provider("bedrock", "eu-west-1"), "eu.anthropic.claude-haiku-5-5"),
     (VERTEX, "claude-haiku-5-5"), (Provider("foundry", resource="acme"), "claude-haiku-5-5"),
     (Provider(base_url="https://llm.example.com"), "claude-haiku-5-5")],
)  # fmt: skip
def test_a_subagents_cheaper_model_is_the_providers_haiku_id_priced_as_haiku(provider: Provider, haiku: str) -> None:
    assert provider_model("haiku", {}, provider) == haiku
    assert price_for(haiku, {}) == price_for("claude-haiku-5-5", {})
    override = {"ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-haiku-4-5"}  # Claude Code's variable, then the provider's id
    assert canonical(provider_model("haiku", override, provider)).startswith("claude-haiku-4-5")
