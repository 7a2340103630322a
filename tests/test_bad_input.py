"""Bad input from the command line, the environment, config files and stdin: one clear line and the documented
exit code (2), never a traceback or an "internal error" exit 1. In-process where the check lives in a parser;
a few runs of the real CLI for what only a process shows (argv and stdin bytes, stderr, the `result` object).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config import files as config
from sprout_agent.config import settings
from sprout_agent.config.dotenv_file import read_dotenv
from sprout_agent.config.files import load_config
from sprout_agent.config.settings import Settings
from sprout_agent.core.compaction import parse_threshold
from sprout_agent.core.errors import ConfigError, UsageError
from sprout_agent.core.ledger import parse_prices
from sprout_agent.faces.sdk.user_lines import parse_user_line
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import agent_command, agent_env, run_agent

DEEP = "[" * 100_000


def one_line_usage_error(error: pytest.ExceptionInfo[UsageError]) -> str:
    message = str(error.value)
    assert error.value.exit_code == 2 and "\n" not in message
    return message


# ---------------------------------------------------------------- environment variables


@pytest.mark.parametrize("url", ["not a url", "http://", "ftp://x", "http://[::1", "http://x:99999", "http://a b"])
def test_a_malformed_anthropic_base_url_is_a_usage_error_naming_the_variable(url: str) -> None:
    with pytest.raises(UsageError) as error:
        Settings.from_env({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url})
    assert one_line_usage_error(error).startswith("ANTHROPIC_BASE_URL must be an http:// or https:// URL")


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080", "https://api.anthropic.com", "http://[::1]:80/v1", "HTTP://x"]
)
def test_a_well_formed_anthropic_base_url_is_kept_as_given(url: str) -> None:
    assert Settings.from_env({"ANTHROPIC_BASE_URL": url}).base_url == url


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
@pytest.mark.parametrize("value", ["sk-ant-secret\n", "sk-ant-secret\r", "sk ant secret", "sk-ant-\udcffsecret"])
def test_a_credential_that_cannot_be_a_header_is_a_usage_error_that_never_echoes_it(name: str, value: str) -> None:
    with pytest.raises(UsageError) as error:
        Settings.from_env({name: value})
    message = one_line_usage_error(error)
    assert message.startswith(f"{name} must be printable ASCII") and "secret" not in message


@pytest.mark.parametrize("model", ["claude sonnet", "claude-\x00", "claude-\udcff"])
def test_a_model_id_with_spaces_control_characters_or_stray_bytes_is_a_usage_error(model: str) -> None:
    with pytest.raises(UsageError) as error:
        Settings.from_env({"ANTHROPIC_MODEL": model})
    assert one_line_usage_error(error).startswith("ANTHROPIC_MODEL must be a model id")


def test_an_unknown_builtin_server_name_is_a_usage_error_not_silently_no_tools() -> None:
    with pytest.raises(UsageError) as error:
        Settings.from_env({"SPROUT_AGENT_BUILTIN_SERVERS": "dev,tood"})
    assert "unknown server 'tood'" in one_line_usage_error(error)
    assert settings.BUILTIN_NAMES == config.BUILTIN_SERVERS


def test_an_integer_setting_too_long_for_int_is_a_usage_error_not_a_value_error() -> None:
    with pytest.raises(UsageError) as error:
        Settings.from_env({"SPROUT_AGENT_MAX_OUTPUT_TOKENS": "9" * 5000})
    assert one_line_usage_error(error).startswith("SPROUT_AGENT_MAX_OUTPUT_TOKENS must be a positive integer")


@pytest.mark.parametrize("raw", ["nan", "1e400", "-inf"])
def test_a_non_finite_compaction_threshold_is_a_usage_error_not_a_crash(raw: str) -> None:
    with pytest.raises(UsageError) as error:
        parse_threshold(raw, 200_000, 32_000)
    assert one_line_usage_error(error).startswith("SPROUT_AGENT_COMPACT_THRESHOLD must be")


@pytest.mark.parametrize("raw", [DEEP, '{"m": [NaN, 1, 1, 1]}', '{"m": [1, Infinity, 1, 1]}', '{"m": [-1, 1, 1, 1]}'])
def test_prices_nested_too_deeply_or_not_finite_are_a_usage_error(raw: str) -> None:
    with pytest.raises(UsageError) as error:
        parse_prices(raw)
    assert one_line_usage_error(error).startswith("SPROUT_AGENT_PRICES must map model prefixes to 4 prices")


# ---------------------------------------------------------------- config files

BAD_DEFINITIONS: list[tuple[str, dict[str, Any], str]] = [
    ("env-name-with-equals", {"command": "srv", "env": {"A=B": "1"}}, "mcpServers.bad.env: 'A=B' cannot be"),
    ("env-name-empty", {"command": "srv", "env": {"": "1"}}, "mcpServers.bad.env: '' cannot be"),
    ("env-name-with-nul", {"command": "srv", "env": {"A\0B": "1"}}, "mcpServers.bad.env: 'A\\x00B' contains a NUL"),
    ("env-value-with-nul", {"command": "srv", "env": {"A": "1\0"}}, "mcpServers.bad.env.A contains a NUL byte"),
    ("arg-with-nul", {"command": "srv", "args": ["ok", "a\0"]}, "mcpServers.bad.args[1] contains a NUL byte"),
    ("command-with-nul", {"command": "sr\0v"}, "mcpServers.bad.command contains a NUL byte"),
    ("cwd-with-nul", {"command": "srv", "cwd": "a\0"}, "mcpServers.bad.cwd contains a NUL byte"),
    ("nul-from-a-variable", {"command": "srv", "args": ["${NUL}"]}, "mcpServers.bad.args[0] contains a NUL byte"),
    ("arg-lone-surrogate", {"command": "srv", "args": ["\ud800"]}, "mcpServers.bad.args[0] is not valid Unicode"),
]


@pytest.mark.parametrize(("data", "fragment"), [c[1:] for c in BAD_DEFINITIONS], ids=[c[0] for c in BAD_DEFINITIONS])
def test_nul_bytes_equals_signs_and_lone_surrogates_in_a_server_are_a_config_error_naming_the_field(
    tmp_path: Path, data: dict[str, Any], fragment: str
) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"bad": data, "good": {"command": "srv"}}}))
    with pytest.raises(ConfigError) as error:
        load_config([], tmp_path, {"NUL": "\0"}, None)
    assert one_line_usage_error(error) == f".mcp.json: {fragment}" or fragment in str(error.value)
    # mcp doctor / mcp list load leniently: that server is reported as broken, the others go on.
    loaded = load_config([], tmp_path, {"NUL": "\0"}, None, strict=False)
    assert [s.name for s in loaded.servers] == ["good"]
    assert [(b.name, fragment in b.error) for b in loaded.broken] == [("bad", True)]


@pytest.mark.parametrize("text", [DEEP, '{"mcpServers": ' + '{"a": ' * 100_000])
def test_a_deeply_nested_config_file_is_one_line_config_error_not_a_recursion_error(tmp_path: Path, text: str) -> None:
    (tmp_path / ".mcp.json").write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config([], tmp_path, {}, None)
    assert one_line_usage_error(error) == ".mcp.json: invalid JSON: nested too deeply"


def test_a_dotenv_value_with_a_nul_byte_is_a_config_error_not_a_server_that_cannot_spawn(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"LANG=a\0b\n")
    with pytest.raises(ConfigError) as error:
        read_dotenv(tmp_path)
    assert one_line_usage_error(error).endswith(".env: 'LANG' holds a NUL byte")


# ---------------------------------------------------------------- stream-json input lines


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (DEEP, "not JSON: nested too deeply"),
        ('{"type": "user", "text": ' + "[" * 100_000, "not JSON: nested too deeply"),
        (b'{"type": "user", "text": "caf\xe9"}\n', "not UTF-8 text (byte 29 is 0xe9)"),
        ('{"type": "user", "text": "hi \\ud800"}', "the user message is not valid Unicode (a lone surrogate)"),
        ('{"type": "user", "message": {"content": [{"type": "text", "text": " \\n"}]}}', "the user message is empty"),
    ],
    ids=["deep", "deep-inside", "latin-1", "lone-surrogate", "blank-block"],
)
def test_a_stdin_json_line_nested_too_deeply_not_utf8_or_holding_a_lone_surrogate_says_what_is_wrong(
    line: str | bytes, problem: str
) -> None:
    with pytest.raises(ValueError, match="^" + problem.replace("(", r"\(").replace(")", r"\)")):
        parse_user_line(line)


def test_a_stdin_json_line_as_utf8_bytes_is_the_users_text() -> None:
    assert parse_user_line('{"type": "user", "text": "café ☕"}\n'.encode()) == "café ☕"


# ---------------------------------------------------------------- the real CLI


def run_bytes(tmp_path: Path, args: list[str | bytes], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The CLI with raw bytes in argv and stdin (argv that is not UTF-8 reaches Python as lone surrogates)."""
    argv = [a if isinstance(a, bytes) else a.encode() for a in agent_command([])] + [
        a if isinstance(a, bytes) else a.encode() for a in args
    ]
    env = agent_env(tmp_path, None)
    return subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=tmp_path, timeout=bounded(60))


pytest_e2e = pytest.mark.e2e


@pytest_e2e
@pytest.mark.slow
def test_a_blank_or_non_utf8_prompt_is_exit_2_with_one_line_and_a_result_object(tmp_path: Path) -> None:
    cases: list[tuple[list[str | bytes], bytes, str]] = [
        (["-p", " \n\t", "--output-format", "json"], b"", "no prompt: -p is empty"),
        (["--output-format", "json"], b"a \xff b\n", "no prompt: stdin is not UTF-8 text (byte 2 is 0xff)"),
    ]
    for args, stdin, line in cases:
        run = run_bytes(tmp_path, args, stdin)
        assert run.returncode == 2, run.stderr
        assert run.stderr.decode() == f"sprout-agent: {line}\n"
        result = json.loads(run.stdout)
        assert (result["exit_code"], result["session_id"], result["errors"]) == (2, None, [line])


@pytest_e2e
@pytest.mark.slow
def test_a_failed_dev_write_leaves_no_traceback_on_stderr_in_json_mode(tmp_path: Path) -> None:
    (tmp_path / "somefile.txt").write_text("a file, not a folder")
    call = tool_use("dev__write", {"file_path": "somefile.txt/x.txt", "content": "y"}, id="t_write")
    with FakeAnthropic([reply(call), reply("done")]) as fake:
        run = run_agent(
            tmp_path, ["-p", "go", "--output-format", "json"], fake=fake, env={"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}
        )
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr and run.stderr == ""
    (sent,) = [b for b in fake.requests[1].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert sent["is_error"] is True and "write failed" in json.dumps(sent)


def test_with_verbose_a_logged_traceback_goes_to_the_server_log_and_an_unwritable_log_stays_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import logging

    from sprout_agent.faces.cli import start

    root = logging.getLogger()
    before = list(root.handlers)
    log = tmp_path / "logs" / "servers.log"
    try:
        start._route_logging(log)  # pyright: ignore[reportPrivateUsage]
        try:
            raise FileExistsError("somefile.txt")
        except FileExistsError:
            logging.getLogger("sprout_agent.tools._server").exception("tool write failed")
        (tmp_path / "a-file").write_text("not a folder")
        start._route_logging(tmp_path / "a-file" / "servers.log")  # pyright: ignore[reportPrivateUsage]
        logging.getLogger("sprout_agent.tools._server").error("nowhere to write this")
        assert len(set(root.handlers) - set(before)) == 1  # a second run in one process replaces the first route
    finally:
        for handler in set(root.handlers) - set(before):
            handler.close()
            root.removeHandler(handler)
    text = log.read_text()
    assert "tool write failed" in text and "Traceback" in text and "FileExistsError: somefile.txt" in text
    assert "nowhere to write this" not in text
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--bogus", "--output-format", "json"], "No such option: --bogus"),
        (["-p", "hi", "--output-format=stream-json", "--max-turns", "x"], "Invalid value for '--max-turns'"),
    ],
)
def test_a_usage_error_with_a_json_output_format_still_writes_the_result_line_on_stdout(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 45: `--bogus --output-format json` wrote no JSON at all, so a script reading stdout got nothing."""
    from sprout_agent.faces.cli.app import app
    from sprout_agent.faces.cli.argv import run

    with pytest.raises(SystemExit) as exited:
        run(app, argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    (line,) = captured.out.splitlines()
    result = json.loads(line)
    assert (result["type"], result["exit_code"], result["is_error"]) == ("result", 2, True)
    assert result["errors"][0].startswith(error) and error in captured.err


def test_a_usage_error_without_a_json_output_format_writes_nothing_on_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sprout_agent.faces.cli.app import app
    from sprout_agent.faces.cli.argv import run

    with pytest.raises(SystemExit):
        run(app, ["--bogus", "-p", "hi"])
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("url", "keyless"),
    [
        ("https://gateway.example.com", False),
        ("http://10.0.0.5:4000", False),
        ("http://127.0.0.1:8080", True),
        ("http://127.1.2.3", True),
        ("http://localhost:4000/v1", True),
        ("http://[::1]:9000", True),
    ],
)
def test_a_missing_key_with_a_base_url_is_a_usage_error_unless_the_api_is_on_this_machines_loopback(
    tmp_path: Path, url: str, keyless: bool
) -> None:
    """Issue 45: a gateway URL and no key sent `Authorization: Bearer none`, retried five times and exited 1; the
    README promises 2 for a missing key. A local proxy or model server on the loopback may need none."""
    from sprout_agent.config.locations import Locations
    from sprout_agent.config.options import Options
    from sprout_agent.session.prepared import prepare

    def prepared() -> object:
        return prepare(Options("q", cwd=tmp_path), Locations.nowhere(), {"ANTHROPIC_BASE_URL": url})

    if keyless:
        assert prepared() is not None
    else:
        with pytest.raises(UsageError, match=r"^ANTHROPIC_API_KEY is not set: .* loopback may need no key\)$"):
            prepared()
