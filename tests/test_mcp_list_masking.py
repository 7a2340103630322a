"""`sprout-agent mcp list` (text and --json) and `mcp doctor` show no credential they know, wherever it is in a
definition: the command, its args, a remote server's url, an error. A credential of the environment is shown as the
`${NAME}` it came from (as the consent prompt shows it); any other the one filter knows (trust/secrets.py: a value the
config hands a server as a credential, a well-known key's shape, a URL's password) as `[redacted]`. In-process: what
the CLI calls after parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sprout_agent.faces.cli.commands import doctor as doctor_module
from tests.test_doctor import MISSING, command_here, listing

GH_TOKEN = "plain-gh-token-0123456789"  # no well-known shape: a secret by its variable's name only
SHAPED = "ghp_" + "L1stM4sk3d0" * 3  # a well-known key's shape, written in the file
SERVER_PASSWORD = "svc-literal-pass-4321"  # a credential the config hands a server, quoted again in its args
BEARER = "hdr-literal-token-5678"  # a remote server's Authorization header, quoted in another server's args
URL_PASSWORD = "urlpass-9999"  # a URL's password, in an argument (a remote server's URL may not hold one)
DB_SHOWN = "postgres://app:[redacted]@db/app"
SECRETS = (GH_TOKEN, SHAPED, SERVER_PASSWORD, BEARER, URL_PASSWORD)

SERVERS: dict[str, dict[str, object]] = {
    "gh": {
        "command": MISSING,
        "args": [
            "--token",
            "${GH_TOKEN}",
            "--key",
            SHAPED,
            f"--svc={SERVER_PASSWORD}",
            f"postgres://app:{URL_PASSWORD}@db/app",
        ],
        "env": {"SVC_PASSWORD": SERVER_PASSWORD, "LOG_LEVEL": "debug"},
    },
    f"tool-{SHAPED}": {"command": f"{MISSING}-${{GH_TOKEN}}", "args": ["--bearer", BEARER]},  # a name, even
    "remote": {
        "type": "http",
        "url": "http://127.0.0.1:9/mcp?token=${GH_TOKEN}",  # nothing listens: doctor's connect fails at once
        "headers": {"Authorization": f"Bearer {BEARER}"},
    },
}


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_mcp_list_masks_a_gh_token_expanded_into_args_and_every_credential_it_knows_in_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `${GH_TOKEN}` in `args` was printed whole: the listing printed the definition as expanded.
    run = command_here(tmp_path, monkeypatch, SERVERS, listing(False), {"GH_TOKEN": GH_TOKEN})
    assert run.code == 0, run.stderr
    assert_no_secret(run.stdout + run.stderr)
    lines = dict(line.split("  (mcp-config.json)  ") for line in run.stdout.splitlines())
    assert lines["gh"] == f"{MISSING} --token ${{GH_TOKEN}} --key [redacted] --svc=[redacted] {DB_SHOWN}"
    assert lines["tool-[redacted]"] == f"{MISSING}-${{GH_TOKEN}} --bearer [redacted]"
    assert lines["remote"] == "http http://127.0.0.1:9/mcp?token=${GH_TOKEN}"


def test_mcp_list_json_masks_every_credential_it_knows_in_command_args_and_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = command_here(tmp_path, monkeypatch, SERVERS, listing(True), {"GH_TOKEN": GH_TOKEN})
    assert run.code == 0, run.stderr
    assert_no_secret(run.stdout + run.stderr)
    servers = {server["name"]: server for server in json.loads(run.stdout)["servers"]}
    assert servers["gh"]["args"] == ["--token", "${GH_TOKEN}", "--key", "[redacted]", "--svc=[redacted]", DB_SHOWN]
    assert servers["tool-[redacted]"]["command"] == f"{MISSING}-${{GH_TOKEN}}"
    assert servers["tool-[redacted]"]["args"] == ["--bearer", "[redacted]"]
    assert servers["remote"]["url"] == "http://127.0.0.1:9/mcp?token=${GH_TOKEN}"


def test_mcp_doctor_masks_credentials_in_the_command_line_and_in_the_missing_command_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The error for a command that is not found quoted the command as expanded.
    def doctor_json(setup: doctor_module.Setup) -> int:
        return doctor_module.doctor_command(setup, 5.0, True)

    for command in (doctor_json, lambda setup: doctor_module.doctor_command(setup, 5.0, False)):
        run = command_here(tmp_path, monkeypatch, SERVERS, command, {"GH_TOKEN": GH_TOKEN})
        assert run.code == 1  # no command exists, nothing listens at the URL
        assert_no_secret(run.stdout + run.stderr)
        assert f"command not found on PATH: {MISSING}-${{GH_TOKEN}}" in run.stdout


@pytest.mark.e2e
def test_mcp_doctor_and_hooks_mask_a_tool_or_hook_a_server_names_after_a_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server chooses its tools' and hooks' names: a key-shaped one is masked in both (the hooks were not)."""
    from sprout_agent.faces.cli.commands.hooks_test import hooks_test_command
    from tests.harness import fake_server

    servers: dict[str, dict[str, object]] = {"named": fake_server(tools=f"echo,{SHAPED},_{SHAPED}")}
    commands = (
        lambda setup: doctor_module.doctor_command(setup, 10.0, True),
        lambda setup: doctor_module.doctor_command(setup, 10.0, False),
        lambda setup: doctor_module.hooks_command(setup, 10.0, True),
        lambda setup: doctor_module.hooks_command(setup, 10.0, False),
        lambda setup: hooks_test_command(setup, (), 10.0, True),
        lambda setup: hooks_test_command(setup, (), 10.0, False),
    )
    for command in commands:
        run = command_here(tmp_path, monkeypatch, servers, command)
        assert run.code == 0, run.stdout + run.stderr
        assert_no_secret(run.stdout + run.stderr)
        assert "[redacted]" in run.stdout
