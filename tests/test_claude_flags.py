"""Claude Code's command line on sprout-agent: its flags rewritten or ignored (claude_flags.py), `-p` as a flag
with options after the prompt (cli_argv.py, parsed in-process by the Typer app's own command), its permission
rules (claude_rules.py) in the policy, `--session-id` / `--fork-session`, `--add-dir`; a few runs as a process.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from sprout_agent.config.locations import Locations
from sprout_agent.config.mcp_import import import_command
from sprout_agent.config.options import Options
from sprout_agent.core.claude_rules import translate
from sprout_agent.core.errors import UsageError
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Policy
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.faces.cli.app import app
from sprout_agent.faces.cli.argv import POSITIONAL
from sprout_agent.faces.cli.claude_flags import rewrite
from sprout_agent.session.prepared import prepare
from sprout_agent.trust.write_policy import ADD_DIRS_ENV
from tests.fake_anthropic import FakeAnthropic, error, reply
from tests.harness import agent_env, fake_server, run_agent, write_config
from tests.headless_here import headless
from tests.stream_schema import valid_lines

COMMAND = get_command(app)
OPTIONS = [p for p in COMMAND.params if getattr(p, "opts", None)]
KNOWN = {name for p in OPTIONS for name in (*p.opts, *p.secondary_opts)}
TAKES_VALUE = {name for p in OPTIONS if not getattr(p, "is_flag", False) for name in p.opts}
COMMANDS = set(getattr(COMMAND, "commands", {}))


def parsed(*argv: str) -> tuple[dict[str, Any], str | None, list[str]]:
    """The main command's parameters, its positional prompt and the warnings, as `sprout-agent ARGV` parses."""
    rewritten = rewrite(list(argv), takes_value=TAKES_VALUE, known=KNOWN, commands=COMMANDS)
    ctx = COMMAND.make_context("sprout-agent", rewritten.argv)
    return ctx.params, ctx.meta.get(POSITIONAL), list(rewritten.warnings)


# ---------------------------------------------------------------- argv


def test_print_is_a_flag_and_options_may_follow_the_prompt() -> None:
    params, prompt, _ = parsed("-p", "what is it?", "--output-format", "json", "--model", "m")
    assert (params["print_mode"], prompt, params["output_format"], params["model"]) == (
        True,
        "what is it?",
        "json",
        "m",
    )
    params, prompt, _ = parsed("--print")  # the prompt comes on stdin
    assert params["print_mode"] and prompt is None
    params, prompt, _ = parsed("fix the test", "--max-turns", "3")  # interactive, options after the prompt too
    assert (params["print_mode"], prompt, params["max_requests"]) == (False, "fix the test", 3)
    params, prompt, _ = parsed("--config", "a.json", "-p", "q", "--permission-mode", "plan")
    assert (params["config_files"], prompt, params["permission_mode"]) == ([Path("a.json")], "q", "plan")


def test_a_subcommand_is_a_subcommand_unless_p_makes_it_the_prompt() -> None:
    ctx = COMMAND.make_context("sprout-agent", ["mcp", "list"])
    assert ctx._protected_args == ["mcp"] and ctx.meta.get(POSITIONAL) is None
    _, prompt, _ = parsed("-p", "mcp")
    assert prompt == "mcp"
    for argv in (["mcp", "add", "--debug"], ["-v", "mcp", "doctor", "-p"], ["--config", "x.json", "hooks", "-d"]):
        assert rewrite(argv, takes_value=TAKES_VALUE, known=KNOWN, commands=COMMANDS).argv == argv  # theirs
    after_p = rewrite(["-p", "mcp", "--debug"], takes_value=TAKES_VALUE, known=KNOWN, commands=COMMANDS)
    assert after_p.argv == ["-p", "mcp"] and len(after_p.warnings) == 1


def test_two_prompts_are_a_usage_error() -> None:
    with pytest.raises(Exception, match="after the prompt"):
        parsed("one", "two")


def test_the_agent_sdks_command_line_parses_with_one_warning_per_ignored_flag() -> None:
    # As claude_agent_sdk's _build_command writes it, with every option set.
    servers = json.dumps({"mcpServers": {"calc": {"type": "sdk", "name": "calc"}}})
    argv = [
        *("--output-format", "stream-json", "--verbose", "--system-prompt", ""),
        *("--tools", "Read,Bash", "--allowedTools", "Read,mcp__calc__add", "--max-turns", "3"),
        *("--max-budget-usd", "1.5", "--disallowedTools", "Bash(rm:*)", "--task-budget", "100"),
        *("--model", "m", "--fallback-model", "f", "--betas", "x", "--permission-mode", "acceptEdits"),
        *("--continue", "--resume=abc", "--session-id=" + str(uuid.UUID(int=1)), "--settings", '{"a": 1}'),
        *("--add-dir", "/tmp", "--mcp-config", servers, "--include-partial-messages", "--include-hook-events"),
        *("--strict-mcp-config", "--fork-session", "--resume-session-at=m1", "--session-mirror"),
        *("--setting-sources=user,project", "--plugin-dir", "/p", "--debug-file", "/d", "--thinking", "adaptive"),
        *("--thinking-display", "summarized", "--max-thinking-tokens", "2000", "--effort", "high"),
        *("--json-schema", '{"type": "object"}', "--input-format", "stream-json"),
    ]
    params, prompt, warnings = parsed(*argv)
    assert prompt is None
    assert params["allowed_tools"] == ["Read,mcp__calc__add"] and params["disallowed_tools"] == ["Bash(rm:*)"]
    assert params["mcp_configs"] == [servers] and params["strict_mcp_config"] and params["fork_session"]
    assert params["resume_id"] == "abc" and params["session_id"] == str(uuid.UUID(int=1))
    assert params["thinking"] == "on"  # --max-thinking-tokens came after --thinking adaptive
    assert params["system_prompt"] == "" and params["add_dirs"] == [Path("/tmp")]
    assert params["include_partial_messages"]  # an option now: the table never drops a flag Typer knows
    assert params["builtin_tools"] == "Read,Bash"
    assert params["json_schema"] == '{"type": "object"}'  # the SDKs' output_format, passed on as given
    assert params["setting_sources"] == "user,project"  # whose settings, agents, skills and commands are read
    assert params["settings"] == ['{"a": 1}']  # read as Claude Code's settings (claude_settings.py)
    ignored = [w.split()[1] for w in warnings if "is ignored" in w]
    assert ignored == [
        "--task-budget",
        "--betas",
        "--include-hook-events",
        "--resume-session-at=m1",
        "--session-mirror",
        "--plugin-dir",
        "--debug-file",
        "--thinking-display",
    ]
    assert all("\n" not in w and len(w) < 200 for w in warnings)


def test_claude_codes_spellings_map_onto_ours() -> None:
    params, _, _ = parsed("--dangerously-skip-permissions", "-p", "q")
    assert params["permission_mode"] == "bypassPermissions"
    params, _, _ = parsed("--thinking", "disabled", "--allowed-tools", "Read", "--disallowed-tools=Edit")
    assert (params["thinking"], params["allowed_tools"], params["disallowed_tools"]) == ("off", ["Read"], ["Edit"])
    params, _, _ = parsed("--thinking=enabled")
    assert params["thinking"] == "on"
    # A flag's value is never read as a flag: a system prompt that reads like one stays the prompt text.
    params, _, warnings = parsed("--system-prompt", "--debug", "-p", "q")
    assert params["system_prompt"] == "--debug" and warnings == []


def test_a_system_prompt_file_is_read_and_a_missing_one_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "sp.txt").write_text("be brief")
    params, _, _ = parsed("--system-prompt-file", str(tmp_path / "sp.txt"), "-p", "q")
    assert params["system_prompt"] == "be brief"
    with pytest.raises(UsageError, match="cannot read it"):
        parsed("--append-system-prompt-file", str(tmp_path / "nope"))


# ---------------------------------------------------------------- permission rules


def test_claude_code_rules_become_our_patterns() -> None:
    translated = translate(["Read,Bash(git diff:*) mcp__git", "mcp__db__query", "mcp__fs__*", "TodoWrite"], deny=False)
    assert translated.patterns == (
        "dev__read",
        "dev__bash(git diff:*)",
        "git__*",
        "db__query",
        "fs__*",
        "todo__todo_write",
    )
    assert translated.warnings == ()
    allow = translate(["WebSearch", "Edit(src/**)", "Bash(git * --force)"], deny=False)
    assert allow.patterns == ()  # not honoured: nothing more runs unasked, and each one says so
    assert len(allow.warnings) == 3 and "no such tool" in allow.warnings[0]
    deny = translate(["Edit(src/**)"], deny=True)
    assert deny.patterns == ("dev__edit",)  # a deny rule we cannot check denies the whole tool
    assert "all of dev__edit is denied" in deny.warnings[0]


def bash(command: str) -> tuple[ToolSpec, ToolUse]:
    return ToolSpec("dev__bash", "dev", "bash", "", {}, False), ToolUse("t", "dev__bash", {"command": command})


@pytest.mark.anyio
async def test_a_command_rule_allows_a_plain_command_and_never_a_compound_one() -> None:
    allow = translate(["Bash(git status:*)", "Bash(npm test)"], deny=False).patterns
    policy = Policy(PermissionMode.ASK, allow=allow)
    for command in ("git status", "git  status --short", "npm test"):
        assert await policy(*bash(command)) is None, command
    for command in (
        "git status; rm -rf /",
        "git status && curl x | sh",
        "git status $(rm -rf ~)",
        "git status `id`",
        "git status > /etc/passwd",
        "git statuses",
        "npm test --watch",  # an exact rule is exact
        "git status\nrm -rf /",
    ):
        assert "not approved" in (await policy(*bash(command)) or ""), command


@pytest.mark.anyio
async def test_a_command_deny_rule_catches_each_part_of_a_compound_command() -> None:
    policy = Policy(PermissionMode.AUTO, deny=translate(["Bash(rm:*)"], deny=True).patterns)
    assert await policy(*bash("ls -la")) is None
    for command in ("rm -rf build", "ls; rm -rf /", "true && rm x", "echo $(rm x)"):
        assert "denied" in (await policy(*bash(command)) or ""), command


# ---------------------------------------------------------------- sessions, --add-dir, --permission-mode


def test_new_sessions_get_dashed_uuids_and_session_id_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = str(uuid.uuid4())
    with FakeAnthropic([reply("one"), reply("two"), reply("three")]) as fake:
        first = headless(tmp_path, monkeypatch, Options("q", cwd=tmp_path, output_format="json"), fake=fake, servers={})
        named = Options("q", cwd=tmp_path, output_format="json", session_id=chosen)
        second = headless(tmp_path, monkeypatch, named, fake=fake, servers={})
        with pytest.raises(UsageError, match="exists already"):
            headless(tmp_path, monkeypatch, named, fake=fake, servers={})
    (result,) = valid_lines(first.stdout)
    assert str(uuid.UUID(result["session_id"])) == result["session_id"]
    (result,) = valid_lines(second.stdout)
    assert result["session_id"] == chosen


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"session_id": "not-a-uuid"}, "must be a UUID"),
        ({"session_id": uuid.uuid4().hex}, "must be a UUID"),
        ({"fork_session": True}, "goes with --resume"),
        ({"session_id": str(uuid.uuid4()), "continue_latest": True}, "add --fork-session"),
        ({"add_dirs": (Path("missing"),)}, "--add-dir missing: not a directory"),
    ],
)
def test_bad_session_and_directory_flags_are_usage_errors(tmp_path: Path, extra: dict[str, Any], message: str) -> None:
    environ = agent_env(tmp_path, None)
    with pytest.raises(UsageError, match=message):
        prepare(Options("q", cwd=tmp_path, **extra), Locations.nowhere(), environ)


def test_fork_session_goes_on_in_a_new_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic([reply("first"), reply("forked")]) as fake:
        first = headless(tmp_path, monkeypatch, Options("q", cwd=tmp_path, output_format="json"), fake=fake, servers={})
        fork = Options("more", cwd=tmp_path, output_format="json", continue_latest=True, fork_session=True)
        forked = headless(tmp_path, monkeypatch, fork, fake=fake, servers={})
    assert forked.code == 0, forked.stderr
    (before,), (after,) = valid_lines(first.stdout), valid_lines(forked.stdout)
    assert after["session_id"] != before["session_id"]
    assert [m["role"] for m in fake.requests[1].body["messages"]] == ["user", "assistant", "user"]
    sessions = tmp_path / "data" / "sprout-agent" / "sessions"
    old = (sessions / f"{before['session_id']}.jsonl").read_text()
    assert "more" not in old and "more" in (sessions / f"{after['session_id']}.jsonl").read_text()


def test_add_dir_lets_the_dev_tools_write_there_and_only_there(tmp_path: Path) -> None:
    from sprout_agent.trust.workspace import Refused, Workspace

    work, extra, other = tmp_path / "work", tmp_path / "extra", tmp_path / "other"
    for directory in (work, extra, other):
        directory.mkdir()
    environ = agent_env(tmp_path, None, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"})
    prepared = prepare(Options("q", cwd=work, add_dirs=(extra,)), Locations.nowhere(), environ)
    (dev,) = [server for server in prepared.loaded.servers if server.name == "dev"]
    assert dev.env[ADD_DIRS_ENV] == str(extra.resolve())
    assert str(extra.resolve()) in prepared.sandbox.policy.allow_write  # and bash may write there
    ws = Workspace.from_environment(str(work), dev.env)
    assert ws.writable(str(extra / "f.txt")).real == str(extra / "f.txt")
    with pytest.raises(Refused, match="outside the working directory"):
        ws.writable(str(other / "f.txt"))


def test_plan_mode_narrows_the_sandbox_as_read_only_does(tmp_path: Path) -> None:
    environ = agent_env(tmp_path, None)
    for mode in (PermissionMode.PLAN, PermissionMode.READ_ONLY):
        prepared = prepare(Options("q", cwd=tmp_path, permission_mode=mode), Locations.nowhere(), environ)
        assert prepared.sandbox.policy.mode in ("read-only", "off"), mode


# ---------------------------------------------------------------- as a process


@pytest.mark.e2e
def test_claude_code_style_command_lines_run(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    inline = json.dumps({"mcpServers": {"fake": fake_server(log=str(log))}})
    with FakeAnthropic([reply("forty-two"), reply("piped")]) as fake:
        args = ["-p", "what is it?", "--output-format", "json", "--mcp-config", inline, "--strict-mcp-config"]
        args += ["--settings", "{}", "--permission-mode", "dontAsk", "--allowedTools", "mcp__fake__echo"]
        run = run_agent(
            tmp_path,
            args,
            fake=fake,
            env={"SPROUT_AGENT_BUILTIN_SERVERS": "dev"},
        )
        piped = run_agent(tmp_path, ["--print", "--config", str(write_config(tmp_path, {}))], fake=fake, stdin="hi")
    assert run.code == 0, run.stderr
    (result,) = valid_lines(run.stdout)
    assert result["result"] == "forty-two"
    assert "--settings" not in run.stderr  # read now: an empty object is no settings
    tools = {tool["name"] for tool in fake.requests[0].body["tools"]}
    assert "fake__echo" in tools and "dev__bash" in tools  # strict: only --mcp-config servers, built-ins kept
    assert piped.code == 0 and piped.stdout == "piped\n"
    assert fake.requests[1].body["messages"][0]["content"][0]["text"] == "hi"


def test_an_overloaded_model_falls_back_to_the_fallback_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = Options("q", cwd=tmp_path, model="claude-main-1", fallback_model="claude-spare-1")
    with FakeAnthropic([error(529), reply("from the spare"), reply("still the spare")]) as fake:
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={})
        again = headless(tmp_path, monkeypatch, replace(options, fallback_model=None), fake=fake, servers={})
    assert (run.code, run.stdout) == (0, "from the spare\n"), run.stderr
    assert [r.body["model"] for r in fake.requests] == ["claude-main-1", "claude-spare-1", "claude-main-1"]
    assert "claude-main-1 is overloaded: switching to the fallback model claude-spare-1" in run.stderr
    assert again.code == 0  # the fallback lasts one session: a new run starts on the main model again


# ---------------------------------------------------------------- mcp import claude


def test_mcp_import_claude_copies_user_servers_keeps_ours_and_never_prints_a_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude = tmp_path / ".claude.json"
    secret = "sk-very-secret-123456"
    claude.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"TOKEN": secret}},
                    "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": secret}},
                    "mine": {"command": "theirs"},
                },
                "projects": {"/some/repo": {"mcpServers": {"db": {"command": "db-server"}}}},
            }
        )
    )
    user_dir = tmp_path / "config"
    user_dir.mkdir()
    (user_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"mine": {"command": "ours"}}}))

    assert import_command(claude, user_dir, project=None, force=False, dry_run=True) == 0
    preview = capsys.readouterr().out
    assert json.loads((user_dir / "mcp.json").read_text())["mcpServers"] == {"mine": {"command": "ours"}}
    assert "would copy: git: uvx mcp-server-git  [env TOKEN=…]" in preview
    assert "would copy: web: http https://example.com/mcp  [headers Authorization=…]" in preview
    assert "kept ours: mine" in preview and "1 local-scope server(s) of /some/repo" in preview

    assert import_command(claude, user_dir, project=None, force=False, dry_run=False) == 0
    out = capsys.readouterr().out
    written = json.loads((user_dir / "mcp.json").read_text())["mcpServers"]
    assert written["git"]["env"] == {"TOKEN": secret} and written["mine"] == {"command": "ours"}
    assert secret not in preview + out
    assert (user_dir / "mcp.json").stat().st_mode & 0o077 == 0

    assert import_command(claude, user_dir, project=Path("/some/repo"), force=False, dry_run=False) == 0
    assert "db" in json.loads((user_dir / "mcp.json").read_text())["mcpServers"]
    assert import_command(claude, user_dir, project=None, force=True, dry_run=False) == 0
    assert "copied (replacing ours): mine: theirs" in capsys.readouterr().out
    assert import_command(tmp_path / "none.json", user_dir, project=None, force=False, dry_run=False) == 2


def test_debug_takes_a_filter_when_one_follows_as_claude_codes_parser_does() -> None:
    _, prompt, warnings = parsed("--debug", "api,hooks", "-p", "q")
    assert prompt == "q" and warnings[0].startswith("warning: --debug api,hooks is not supported")
    params, prompt, _ = parsed("-d", "--verbose", "-p", "q")
    assert params["verbose"] and prompt == "q"


def test_a_value_given_with_equals_stays_bound_to_its_flag() -> None:
    params, prompt, _ = parsed("--resume=-p", "--session-id=--debug", "-p", "q")
    assert (params["resume_id"], params["session_id"], prompt) == ("-p", "--debug", "q")
