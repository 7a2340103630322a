"""Config files, ${VAR} expansion, lookup order, Settings from the environment, MCP child env scrub."""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.dotenv_file import read_dotenv
from sprout_agent.config.files import LoadedConfig, ServerConfig, load_config, with_builtin_servers
from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.config.settings import (
    DEFAULT_MODEL,
    ENV_VARS,
    PROCESS_ENV_VARS,
    Settings,
    child_environment,
    render_env_example,
)
from sprout_agent.core.errors import EXIT_USAGE, ConfigError, UsageError
from sprout_agent.core.messages import text_of
from sprout_agent.session.prepared import prepare
from tests.guards import WEAKENING
from tests.package_source import package_modules

REPO = Path(__file__).resolve().parent.parent


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def servers(**entries: Any) -> dict[str, Any]:
    return {"mcpServers": entries}


def load_one(tmp_path: Path, data: Any, env: dict[str, str] | None = None) -> LoadedConfig:
    write(tmp_path / ".mcp.json", data)
    return load_config([], tmp_path, env or {}, None)


def config_error(tmp_path: Path, data: Any, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_one(tmp_path, data, env)
    message = str(info.value)
    assert info.value.exit_code == EXIT_USAGE == 2
    assert "\n" not in message
    assert message.startswith(".mcp.json: "), message
    return message


OK = {"command": "srv"}

# (case id, file content, fragments the one-line message must contain)
ERROR_CASES: list[tuple[str, Any, tuple[str, ...]]] = [
    ("bad-json", '{"mcpServers": {\n  "a": }', ("invalid JSON at line 2 column 8",)),
    ("top-not-object", [1, 2], ("top level must be a JSON object",)),
    ("servers-not-object", {"mcpServers": []}, ("mcpServers must be an object",)),
    ("entry-not-object", servers(git="git-mcp"), ("mcpServers.git must be an object",)),
    ("missing-command", servers(git={"args": []}), ("mcpServers.git: missing command",)),
    ("command-not-string", servers(git={"command": ["git"]}), ("mcpServers.git.command must be",)),
    ("command-empty", servers(git={"command": " "}), ("mcpServers.git.command must be",)),
    ("args-not-list", servers(git={"command": "g", "args": "x"}), ("mcpServers.git.args must be a list",)),
    ("args-not-strings", servers(git={"command": "g", "args": [1]}), ("mcpServers.git.args must be a list",)),
    ("env-not-object", servers(git={"command": "g", "env": ["A=1"]}), ("mcpServers.git.env must be",)),
    ("env-not-strings", servers(git={"command": "g", "env": {"PORT": 80}}), ("mcpServers.git.env must be",)),
    ("cwd-not-string", servers(git={"command": "g", "cwd": 3}), ("mcpServers.git.cwd must be a string",)),
    ("timeout-string", servers(git={"command": "g", "timeout": "5"}), ("mcpServers.git.timeout must be",)),
    ("timeout-zero", servers(git={"command": "g", "timeout": 0}), ("mcpServers.git.timeout must be",)),
    ("timeout-negative", servers(git={"command": "g", "timeout": -1}), ("mcpServers.git.timeout must be",)),
    ("timeout-bool", servers(git={"command": "g", "timeout": True}), ("mcpServers.git.timeout must be",)),
    ("timeout-nan", '{"mcpServers": {"git": {"command": "g", "timeout": NaN}}}', ("mcpServers.git.timeout",)),
    ("bad-type", servers(git={"command": "g", "type": "grpc"}), ("mcpServers.git.type must be",)),
    ("type-not-string", servers(git={"command": "g", "type": 1}), ("mcpServers.git.type must be",)),
    ("disabled-not-bool", servers(git={"command": "g", "disabled": "yes"}), ("mcpServers.git.disabled",)),
    ("enabled-not-bool", servers(git={"command": "g", "enabled": 0}), ("mcpServers.git.enabled",)),
    ("name-double-underscore", servers(my__git=OK), ("mcpServers.my__git: server name",)),
    ("name-space", {"mcpServers": {"my git": OK}}, ("mcpServers.my git: server name",)),
    ("name-empty", {"mcpServers": {"": OK}}, ("mcpServers.: server name",)),
    ("name-too-long", {"mcpServers": {"a" * 65: OK}}, ("server name",)),
    ("unset-var", servers(git={"command": "${GIT_BIN}"}), ("mcpServers.git.command", "GIT_BIN is not set")),
    ("unset-var-arg", servers(git={"command": "g", "args": ["ok", "${X}"]}), ("mcpServers.git.args[1]", "X")),
    ("unset-var-env", servers(git={"command": "g", "env": {"K": "${TOKEN}"}}), ("git.env.K", "TOKEN")),
    ("unset-var-cwd", servers(git={"command": "g", "cwd": "${ROOT}/x"}), ("mcpServers.git.cwd", "ROOT")),
    ("malformed-ref", servers(git={"command": "${GIT BIN}"}), ("git.command", "malformed variable")),
    ("unterminated-ref", servers(git={"command": "${GIT"}), ("git.command", "malformed variable")),
    ("empty-after-expand", servers(git={"command": "${E}"}), ("mcpServers.git.command is empty",)),
]


@pytest.mark.parametrize(("data", "fragments"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_config_errors_are_one_line_naming_file_and_key(tmp_path: Path, data: Any, fragments: tuple[str, ...]) -> None:
    message = config_error(tmp_path, data, env={"E": ""})
    for fragment in fragments:
        assert fragment in message, message


def test_full_entry_is_parsed(tmp_path: Path) -> None:
    entry = {"command": "uvx", "args": ["mcp-server-git", "--repo", "."], "env": {"A": "1"},
             "cwd": "sub", "timeout": 12000, "type": "stdio", "disabled": False, "enabled": True}  # fmt: skip
    loaded = load_one(tmp_path, {"$schema": "https://x", "mcpServers": {"git": entry}})
    assert loaded.servers == (
        ServerConfig(
            name="git",
            command="uvx",
            args=("mcp-server-git", "--repo", "."),
            env={"A": "1"},
            cwd=str(tmp_path / "sub"),
            source=tmp_path / ".mcp.json",
            project=True,
            call_timeout=12.0,
        ),
    )
    assert loaded.files_read == (tmp_path / ".mcp.json",)
    assert loaded.notices == ()


def test_absolute_cwd_and_defaults(tmp_path: Path) -> None:
    loaded = load_one(tmp_path, servers(a={"command": "x", "cwd": "/srv/data"}, b=OK))
    a, b = loaded.servers
    assert (a.cwd, a.args, a.env, a.start_timeout) == ("/srv/data", (), {}, None)
    assert (b.name, b.cwd) == ("b", None)


def test_config_with_no_servers_key_is_empty(tmp_path: Path) -> None:
    assert load_one(tmp_path, {}).servers == ()


EXPANSIONS = [
    ("${HOME}/bin", "/home/u/bin"),
    ("pre-${HOME}-post", "pre-/home/u-post"),
    ("${MISSING:-fallback}", "fallback"),
    ("${MISSING:-}", ""),
    ("${EMPTY:-fallback}", ""),  # Claude Code's documented rule: the default only when VAR is unset
    ("${EMPTY}", ""),
    ("${HOME:-other}", "/home/u"),
    ("$HOME and $ and $5", "$HOME and $ and $5"),  # only ${...} expands
    ("${A}${B}", "ab"),
    ("${MISSING:-a b:c}", "a b:c"),
]


@pytest.mark.parametrize(("raw", "expected"), EXPANSIONS)
def test_expansion(tmp_path: Path, raw: str, expected: str) -> None:
    env = {"HOME": "/home/u", "EMPTY": "", "A": "a", "B": "b"}
    entry = {"command": "run", "args": [raw], "env": {"V": raw}, "cwd": f"/x/{raw}"}
    (server,) = load_one(tmp_path, servers(s=entry), env).servers
    assert server.args == (expected,)
    assert server.env == {"V": expected}
    assert server.cwd == str(Path(f"/x/{expected}"))


def test_expansion_in_command_and_relative_cwd(tmp_path: Path) -> None:
    entry = {"command": "${BIN:-node}", "cwd": "${SUB}"}
    (server,) = load_one(tmp_path, servers(s=entry), {"SUB": "pkg"}).servers
    assert server.command == "node"
    assert server.cwd == str(tmp_path / "pkg")


# ---------------------------------------------------------------- files written for other clients


def test_keys_other_clients_write_are_a_notice_naming_the_key_and_the_server_still_runs(tmp_path: Path) -> None:
    cline = {"command": "srv", "alwaysAllow": ["x"], "autoApprove": [], "description": "git", "transportType": "stdio"}
    remote = {"type": "http", "url": "https://example.com/mcp", "description": "docs", "networkTimeout": 5}
    data = {"mcpServers": {"git": cline, "docs": remote}, "globalShortcut": "Ctrl+Space"}
    loaded = load_one(tmp_path, data)
    assert [s.name for s in loaded.servers] == ["git", "docs"]
    assert loaded.notices == (
        ".mcp.json: unknown key 'globalShortcut' ignored",
        ".mcp.json: mcpServers.git: unknown key 'alwaysAllow' ignored (allow tools with --allow-tools SERVER__TOOL)",
        ".mcp.json: mcpServers.git: unknown key 'autoApprove' ignored (allow tools with --allow-tools SERVER__TOOL)",
        ".mcp.json: mcpServers.git: unknown key 'description' ignored",
        ".mcp.json: mcpServers.git: unknown key 'transportType' ignored",
        ".mcp.json: mcpServers.docs: unknown key 'description' ignored",
        ".mcp.json: mcpServers.docs: unknown key 'networkTimeout' ignored",
    )


@pytest.mark.parametrize("entry", [{"command": "srv"}, {"type": "http", "url": "https://example.com/mcp"}])
def test_timeout_is_milliseconds_bounding_each_tool_call_as_in_claude_code(tmp_path: Path, entry: Any) -> None:
    (server,) = load_one(tmp_path, servers(s={**entry, "timeout": 90000})).servers
    assert (server.call_timeout, server.start_timeout) == (90.0, None)


def test_a_timeout_that_looks_like_seconds_is_ignored_with_a_notice_saying_what_to_write(tmp_path: Path) -> None:
    loaded = load_one(tmp_path, servers(s={"command": "srv", "timeout": 20}))
    assert loaded.servers[0].call_timeout is None
    assert loaded.notices == (
        ".mcp.json: mcpServers.s.timeout 20 ignored: timeout is in milliseconds (as in Claude Code), at least 1000;"
        " for 20 seconds write 20000",
    )


def test_pwd_is_the_sessions_directory_not_the_shells_in_every_file(tmp_path: Path) -> None:
    project, user = tmp_path / "project", tmp_path / "user"
    entry = {"command": "uvx", "args": ["mcp-server-git", "--repository", "${PWD}"]}
    write(project / ".mcp.json", servers(git=entry))
    write(user / "mcp.json", servers(fs={"command": "fs", "args": ["${PWD}"]}))
    shell = {"PWD": str(tmp_path)}  # the directory sprout-agent was started from, before --cwd
    loaded = load_config([], project, shell, user, user_env=shell)
    assert [s.args[-1] for s in loaded.servers] == [str(project), str(project)]


def test_an_unset_variable_skips_only_that_server_unless_strict(tmp_path: Path) -> None:
    data = servers(needs={"command": "srv", "args": ["${SURELY_UNSET}"]}, plain={"command": "srv"})
    write(tmp_path / "cfg.json", data)
    options = Options(prompt="hi", config_files=(tmp_path / "cfg.json",), cwd=tmp_path)
    environ = {"ANTHROPIC_API_KEY": "sk-ant-test", "SPROUT_AGENT_BUILTIN_SERVERS": "none"}
    prepared = prepare(options, Locations.nowhere(), environ)
    assert [s.name for s in prepared.loaded.servers] == ["plain"]
    (notice,) = [n for n in prepared.loaded.notices if "SURELY_UNSET" in n]
    assert notice.startswith("cfg.json: mcpServers.needs.args[0]: variable SURELY_UNSET is not set")
    assert notice.endswith("(server 'needs' skipped)")
    with pytest.raises(ConfigError, match="SURELY_UNSET"):
        prepare(replace(options, require_servers=True), Locations.nowhere(), environ)


@pytest.mark.anyio
async def test_a_servers_own_timeout_bounds_its_tool_calls_instead_of_the_global_one() -> None:
    from tests.test_servers import Pool

    (todo,) = with_builtin_servers(LoadedConfig((), (), ()), ["todo"], Path.cwd()).servers
    async with Pool(replace(todo, call_timeout=1e-9), tool_timeout=20.0) as p:  # in-process: no interpreter start
        outcome = await p.pool.call(p.spec("todo", "todo_read"), {})
    assert outcome.is_error and "timed out after 1e-09 s" in text_of(outcome.content)


@pytest.mark.parametrize(
    ("entry", "transport"),
    [
        ({"url": "https://example.com/mcp"}, "http"),
        ({"type": "http", "url": "https://example.com/mcp"}, "http"),
        ({"type": "streamable-http", "url": "https://example.com/mcp"}, "http"),
        ({"type": "streamableHttp", "url": "https://example.com/mcp"}, "http"),
        ({"type": "sse", "url": "https://example.com/sse"}, "sse"),
    ],
)
def test_remote_entries_are_read_with_their_transport(tmp_path: Path, entry: dict[str, Any], transport: str) -> None:
    (remote,) = load_one(tmp_path, servers(remote=entry)).servers
    assert (remote.transport, remote.url, remote.command) == (transport, entry["url"], "")


@pytest.mark.parametrize(
    "fields",
    [
        {"transport": "http"},  # a remote transport without its URL
        {"url": "https://example.com/mcp"},  # a URL that a stdio server would ignore
        {"transport": "in-process"},  # no module to run
        {"in_process": "tests.inproc_fake"},  # a module that a stdio server would ignore
        {"transport": "sdk", "url": "https://example.com/mcp"},
    ],
)
def test_a_server_record_holds_its_url_and_module_to_its_transport(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="exactly when the transport is"):
        ServerConfig("s", "", **fields)


def test_url_and_headers_expand_variables_like_command_and_args(tmp_path: Path) -> None:
    entry = {
        "type": "http",
        "url": "https://${HOST:-example.com}/mcp",
        "headers": {"Authorization": "Bearer ${TOKEN}", "X-Team": "${TEAM:-core}"},
    }
    (remote,) = load_one(tmp_path, servers(remote=entry), {"TOKEN": "t0ken"}).servers
    assert remote.url == "https://example.com/mcp"
    assert remote.headers == {"Authorization": "Bearer t0ken", "X-Team": "core"}


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://example.com/mcp", "plain http is allowed only to this machine"),
        ("ftp://example.com/mcp", "must be an http:// or https:// URL"),
        ("https://user:pw@example.com/mcp", "put credentials in headers"),
        ("https:///mcp", "with a host"),
    ],
)
def test_a_url_that_would_leak_headers_or_is_not_http_is_refused(tmp_path: Path, url: str, fragment: str) -> None:
    assert fragment in config_error(tmp_path, servers(remote={"type": "http", "url": url}))


@pytest.mark.parametrize("url", ["http://localhost:8080/mcp", "http://127.0.0.1:1/mcp", "http://[::1]:1/mcp"])
def test_plain_http_to_this_machine_is_allowed(tmp_path: Path, url: str) -> None:
    (remote,) = load_one(tmp_path, servers(remote={"type": "http", "url": url})).servers
    assert remote.url == url


def test_a_header_with_a_line_break_is_refused(tmp_path: Path) -> None:
    entry = {"type": "http", "url": "https://example.com", "headers": {"X": "a${V}"}}
    assert "line break" in config_error(tmp_path, servers(remote=entry), {"V": "\r\nEvil: 1"})


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"type": "ws", "url": "ws://localhost:1"}, "type 'ws' is not supported"),
        ({"type": "http", "url": "https://x.example", "headersHelper": "get-token"}, "headersHelper is not supported"),
    ],
)
def test_unsupported_remote_entries_are_skipped_with_a_notice(tmp_path: Path, entry: dict[str, Any], why: str) -> None:
    loaded = load_one(tmp_path, servers(remote=entry, local=OK))
    assert [s.name for s in loaded.servers] == ["local"]
    (notice,) = loaded.notices
    assert notice.startswith(".mcp.json: skipping server 'remote': ") and why in notice


@pytest.mark.parametrize("flag", [{"disabled": True}, {"enabled": False}])
def test_disabled_entries_are_skipped_with_a_notice(tmp_path: Path, flag: dict[str, bool]) -> None:
    loaded = load_one(tmp_path, servers(off={"command": "x", **flag}, on=OK))
    assert [s.name for s in loaded.servers] == ["on"]
    assert loaded.notices == (".mcp.json: skipping server 'off': disabled",)


# ---------------------------------------------------------------- lookup


def test_no_config_anywhere(tmp_path: Path) -> None:
    assert load_config([], tmp_path, {}, tmp_path / "nouser") == LoadedConfig((), (), ())


def test_cwd_file_wins_over_git_root_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".mcp.json", servers(root=OK))
    sub = tmp_path / "a" / "b"
    write(sub / ".mcp.json", servers(here=OK))
    assert [s.name for s in load_config([], sub, {}, None).servers] == ["here"]


def test_git_root_file_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: elsewhere")  # a worktree's .git is a file
    write(tmp_path / ".mcp.json", servers(root={"command": "x", "cwd": "tools"}))
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    loaded = load_config([], sub, {}, None)
    assert [s.name for s in loaded.servers] == ["root"]
    assert loaded.servers[0].cwd == str(tmp_path / "tools")  # relative to the file, not to cwd
    assert loaded.files_read == (tmp_path / ".mcp.json",)


def test_the_nearest_file_above_is_found_git_root_or_not(tmp_path: Path) -> None:
    # As Claude Code looks: any directory above, not only the git root; the nearest file wins.
    write(tmp_path / ".mcp.json", servers(outer=OK))
    inner = tmp_path / "inner"
    (inner / ".git").mkdir(parents=True)
    sub = inner / "sub"
    sub.mkdir()
    loaded = load_config([], sub, {}, None)
    assert [(s.name, s.project) for s in loaded.servers] == [("outer", True)]
    write(inner / ".mcp.json", servers(nearer=OK))
    assert [s.name for s in load_config([], sub, {}, None).servers] == ["nearer"]


def test_a_file_in_a_directory_anybody_may_write_is_not_read(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    write(shared / ".mcp.json", servers(planted=OK))
    shared.chmod(0o1777)  # as /tmp is
    sub = shared / "mine"
    sub.mkdir()
    loaded = load_config([], sub, {}, None)
    assert loaded.servers == ()
    assert loaded.notices == (f"{shared / '.mcp.json'}: not read (its directory is writable by anybody)",)


def test_mcp_config_adds_files_and_inline_json_to_the_lookup(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", servers(p=OK, shared={"command": "project"}))
    write(tmp_path / "extra.json", servers(extra=OK))
    inline = json.dumps(servers(shared={"command": "inline", "args": ["${HOME_ONLY}"]}, sdk={"type": "sdk"}))
    loaded = load_config(
        [], tmp_path, {}, None, strict=False, user_env={"HOME_ONLY": "h"}, mcp_configs=["extra.json", inline]
    )
    assert [(s.name, s.command, s.project) for s in loaded.servers] == [
        ("p", "srv", True),
        ("shared", "inline", False),  # --mcp-config wins a clash: named for this run
        ("extra", "srv", False),
        ("sdk", "", False),  # hosted by the SDK driving the run (docs/sdk.md): no command
    ]
    assert loaded.servers[1].args == ("h",)  # inline JSON expands from the real environment
    assert loaded.files_read == (tmp_path / ".mcp.json", tmp_path / "extra.json")
    assert loaded.servers[3].transport == "sdk" and not loaded.broken


def test_strict_mcp_config_reads_only_the_given_servers(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", servers(p=OK))
    user_dir = tmp_path / "user"
    write(user_dir / "mcp.json", servers(u=OK))
    inline = json.dumps(servers(given=OK))
    loaded = load_config([], tmp_path, {}, user_dir, mcp_configs=[inline], only_given=True)
    assert [s.name for s in loaded.servers] == ["given"]
    assert load_config([], tmp_path, {}, user_dir, only_given=True).servers == ()


def test_a_project_server_cannot_shadow_a_server_of_yours_by_its_name(tmp_path: Path) -> None:
    project, user_dir = tmp_path / "proj", tmp_path / "cfg" / "sprout-agent"
    write(project / ".mcp.json", servers(shared={"command": "project"}, p=OK, dev={"command": "project-dev"}))
    write(user_dir / "mcp.json", servers(u=OK, shared={"command": "user"}))
    loaded = load_config([], project, {}, user_dir)
    assert [(s.name, s.command, s.project) for s in loaded.servers] == [
        ("shared", "user", False),
        ("p", "srv", True),
        ("dev", "project-dev", True),
        ("u", "srv", False),
    ]
    assert loaded.files_read == (project / ".mcp.json", user_dir / "mcp.json")
    (notice,) = loaded.notices
    assert notice == (
        f".mcp.json: project server 'shared' not used: a server of yours has that name (in {user_dir / 'mcp.json'})"
        " and stays"
    )
    with_dev = with_builtin_servers(loaded, ["dev"], project)
    assert [(s.name, s.transport == "in-process") for s in with_dev.servers] == [
        ("dev", True), ("shared", False), ("p", False), ("u", False)]  # fmt: skip
    assert with_dev.notices[-1] == (
        ".mcp.json: project server 'dev' not used: a server of yours has that name (built in) and stays"
    )


def test_a_broken_server_of_yours_keeps_its_name_from_a_project_server(tmp_path: Path) -> None:
    project, user_dir = tmp_path / "proj", tmp_path / "cfg"
    write(project / ".mcp.json", servers(guard={"command": "project-guard"}))
    write(user_dir / "mcp.json", servers(guard={"command": "${UNSET_GUARD_BIN}"}))
    loaded = load_config([], project, {}, user_dir, strict=False)
    assert loaded.servers == () and [(b.name, b.project) for b in loaded.broken] == [("guard", False)]
    assert "project server 'guard' not used" in loaded.notices[-1]


def test_user_file_alone(tmp_path: Path) -> None:
    user_dir = tmp_path / "cfg"
    write(user_dir / "mcp.json", servers(u=OK))
    (tmp_path / "proj").mkdir()
    assert [s.name for s in load_config([], tmp_path / "proj", {}, user_dir).servers] == ["u"]


def test_explicit_files_replace_lookup_and_later_file_wins(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", servers(ignored=OK))
    user_dir = tmp_path / "cfg"
    write(user_dir / "mcp.json", servers(ignored_too=OK))
    write(tmp_path / "a.json", servers(x={"command": "from-a"}, only_a=OK))
    write(tmp_path / "b.json", servers(only_b=OK, x={"command": "from-b"}))
    loaded = load_config([Path("a.json"), tmp_path / "b.json"], tmp_path, {}, user_dir)
    assert [(s.name, s.command) for s in loaded.servers] == [
        ("x", "from-b"),
        ("only_a", "srv"),
        ("only_b", "srv"),
    ]
    assert loaded.files_read == (tmp_path / "a.json", tmp_path / "b.json")
    assert loaded.notices == ("server 'x' defined twice: using the one in b.json",)


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "a.json", servers(a=OK))
    with pytest.raises(ConfigError) as info:
        load_config([Path("a.json"), Path("nope.json")], tmp_path, {}, None)
    assert str(info.value) == "nope.json: config file not found"
    assert info.value.exit_code == 2


def test_explicit_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ConfigError, match=r"^dir.json: cannot read config file: "):
        load_config([Path("dir.json")], tmp_path, {}, None)


def test_error_outside_cwd_names_the_absolute_path(tmp_path: Path) -> None:
    bad = write(tmp_path / "elsewhere" / "c.json", servers(git={"command": 1}))
    (tmp_path / "proj").mkdir()
    with pytest.raises(ConfigError, match=rf"^{bad}: mcpServers.git.command must be"):
        load_config([bad], tmp_path / "proj", {}, None)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(servers(a=OK)).encode())
    assert [s.name for s in load_config([], tmp_path, {}, None).servers] == ["a"]


# ---------------------------------------------------------------- .env


def test_read_dotenv(tmp_path: Path) -> None:
    assert read_dotenv(tmp_path).values == {}
    (tmp_path / ".env").write_text("# c\nA=1\nexport B='two words'\nNOVALUE\nC=${A}x\n")
    assert read_dotenv(tmp_path).values == {"A": "1", "B": "two words", "C": "1x"}


def test_a_repositorys_env_linked_to_your_aws_credentials_is_not_read(tmp_path: Path) -> None:
    """Read through the link, `~/.aws/credentials` became "credentials from the project's .env", handed to the
    repository's server by `${aws_secret_access_key}` in its args (with --trust-project, or one approval)."""
    aws = tmp_path / "home" / ".aws" / "credentials"
    aws.parent.mkdir(parents=True)
    aws.write_text("[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "config").mkdir()
    (repo / ".env").symlink_to(aws)
    dotenv = read_dotenv(repo)
    assert dotenv.values == {}
    assert dotenv.notices == (f"{repo / '.env'}: not read (a symbolic link out of the project, to {aws})",)
    (repo / ".env").unlink()
    (repo / "config" / "dev.env").write_text("A=1\n")
    (repo / ".env").symlink_to("config/dev.env")  # a link within the project is the project's own
    assert read_dotenv(repo).values == {"A": "1"}


def test_dotenv_cannot_redirect_the_api_or_proxy_the_servers(tmp_path: Path) -> None:
    refused = ["ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_CUSTOM_HEADERS", "HTTPS_PROXY", "http_proxy",
               "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_OPTIONS", "MCP_HOOK_SERVERS",
               "PATH", "PYTHONPATH", "LD_PRELOAD", "DYLD_INSERT_LIBRARIES"]  # fmt: skip
    allowed = {"ANTHROPIC_API_KEY": "sk-x", "ANTHROPIC_MODEL": "m", "SPROUT_AGENT_TOOL_TIMEOUT": "5", "MY_VAR": "1"}
    lines = [f"{name}=http://attacker.example" for name in refused] + [f"{k}={v}" for k, v in allowed.items()]
    (tmp_path / ".env").write_text("\n".join(lines) + "\n")
    dotenv = read_dotenv(tmp_path)
    assert dotenv.values == allowed
    assert sorted(dotenv.ignored) == sorted(refused)
    (notice,) = dotenv.notices
    assert "ANTHROPIC_BASE_URL" in notice and "HTTPS_PROXY" in notice


def test_a_dotenv_anybody_could_have_planted_is_not_read(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    write(shared / ".env", "ANTHROPIC_MODEL=planted-model\nMY_VAR=1\n")
    shared.chmod(0o1777)  # as /tmp is: the same check as the .mcp.json beside it
    dotenv = read_dotenv(shared)
    assert dotenv.values == {} and dotenv.notices == (
        f"{shared / '.env'}: not read (its directory is writable by anybody)",
    )
    where = Locations(tmp_path / "config", None, tmp_path / "data", None)
    prepared = prepare(Options(prompt="hi", cwd=shared), where, {"ANTHROPIC_API_KEY": "sk-x"})
    assert prepared.model == DEFAULT_MODEL and "MY_VAR" not in prepared.settings_env
    assert f"{shared / '.env'}: not read (its directory is writable by anybody)" in prepared.loaded.notices


def test_a_dotenv_owned_by_another_user_is_not_read(tmp_path: Path) -> None:
    path = write(tmp_path / ".env", "ANTHROPIC_MODEL=planted-model\n")
    try:
        os.chown(path, 4242, 4242)  # only root may give a file away
    except PermissionError:
        pytest.skip("needs root to make a file another user's")
    dotenv = read_dotenv(tmp_path)
    assert dotenv.values == {} and dotenv.notices == (f"{path}: not read (owned by another user)",)


@pytest.mark.parametrize(("name", "value"), WEAKENING)
def test_a_projects_dotenv_cannot_weaken_a_guard_of_yours(tmp_path: Path, name: str, value: str) -> None:
    where = Locations(tmp_path / "config", None, tmp_path / "data", None)
    environ = {"ANTHROPIC_API_KEY": "sk-x"}
    (tmp_path / "repo").mkdir()
    before = prepare(Options(prompt="hi", cwd=tmp_path / "repo"), where, environ)
    (tmp_path / "repo" / ".env").write_text(f"{name}={value}\nMY_VAR=1\n")
    assert read_dotenv(tmp_path / "repo").ignored == (name,)
    after = prepare(Options(prompt="hi", cwd=tmp_path / "repo"), where, environ)
    # Not read anywhere: neither the settings nor the real-environment-only policies see it.
    assert name not in after.settings_env and after.settings_env["MY_VAR"] == "1"
    assert after.settings == before.settings and after.web == before.web
    assert (after.elicitation, after.allow_sampling) == (before.elicitation, before.allow_sampling)
    assert [s.name for s in after.loaded.servers] == [s.name for s in before.loaded.servers]
    (notice,) = [n for n in after.loaded.notices if n.startswith(".env: ")]
    assert f"ignored {name} (" in notice and "\n" not in notice


# Every variable we read, a repository may set (a project's .env, a batch task's env) only if it is here: a new
# variable is refused (guarded_env.py) unless somebody decides it is harmless and adds it.
REPOSITORY_MAY_SET = {
    "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "SPROUT_AGENT_SERVER_START_TIMEOUT", "SPROUT_AGENT_TOOL_TIMEOUT",
    "SPROUT_AGENT_TOOL_RESULT_MAX_BYTES", "SPROUT_AGENT_MAX_PARALLEL_TOOLS", "SPROUT_AGENT_MAX_OUTPUT_TOKENS",
    "SPROUT_AGENT_MAX_CONTEXT_TOKENS", "SPROUT_AGENT_THINKING", "SPROUT_AGENT_THINKING_BUDGET",
    "SPROUT_AGENT_EFFORT", "SPROUT_AGENT_COMPACT_THRESHOLD", "SPROUT_AGENT_MAX_COMPACTIONS",
    "SPROUT_AGENT_DEBUG", "SPROUT_AGENT_SHARD_INDEX", "API_TIMEOUT_MS",
}  # fmt: skip


def test_a_new_variable_is_one_a_repository_may_not_set_until_decided_otherwise() -> None:
    from sprout_agent.config.guarded_env import refused_because

    names = {var.name for var in (*ENV_VARS, *PROCESS_ENV_VARS)}
    settable = {name for name in names if refused_because(name) is None}
    assert settable == REPOSITORY_MAY_SET


# ---------------------------------------------------------------- Settings


def test_settings_defaults() -> None:
    assert Settings.from_env({}) == Settings(
        hook_servers=None,
        hook_timeout_ms=2500,
        stop_max_rejections=3,
        server_start_timeout=30.0,
        tool_timeout=600.0,
        tool_result_max_bytes=51200,
        max_parallel_tools=8,
        model=DEFAULT_MODEL,
        max_output_tokens=32000,
        max_context_tokens=None,
        compact_threshold=None,
        max_compactions=10,
        api_key_present=False,
        base_url=None,
    )


def test_default_model_is_a_model_the_sdk_knows() -> None:
    from typing import get_args

    from anthropic.types import ModelParam

    known = get_args(get_args(ModelParam)[0])
    assert DEFAULT_MODEL in known and "sonnet" in DEFAULT_MODEL


VALID = [
    ("MCP_HOOK_SERVERS", " a, b ", "hook_servers", " a, b "),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "1", "hook_timeout_ms", 1),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", " 400 ", "hook_timeout_ms", 400),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "", "hook_timeout_ms", 2500),  # blank = default
    ("SPROUT_AGENT_STOP_MAX_REJECTIONS", "0", "stop_max_rejections", 0),
    ("SPROUT_AGENT_SERVER_START_TIMEOUT", "2.5", "server_start_timeout", 2.5),
    ("SPROUT_AGENT_TOOL_TIMEOUT", "90", "tool_timeout", 90.0),
    ("SPROUT_AGENT_TOOL_RESULT_MAX_BYTES", "1024", "tool_result_max_bytes", 1024),
    ("SPROUT_AGENT_MAX_PARALLEL_TOOLS", "1", "max_parallel_tools", 1),
    ("ANTHROPIC_MODEL", "claude-haiku-4-5", "model", "claude-haiku-4-5"),
    ("ANTHROPIC_MODEL", "", "model", DEFAULT_MODEL),
    ("SPROUT_AGENT_MAX_OUTPUT_TOKENS", "4096", "max_output_tokens", 4096),
    ("SPROUT_AGENT_MAX_CONTEXT_TOKENS", "100000", "max_context_tokens", 100000),
    ("SPROUT_AGENT_COMPACT_THRESHOLD", "0.8", "compact_threshold", "0.8"),
    ("SPROUT_AGENT_MAX_COMPACTIONS", "0", "max_compactions", 0),
    ("ANTHROPIC_API_KEY", "sk-x", "api_key_present", True),
    ("ANTHROPIC_API_KEY", "", "api_key_present", False),
    ("ANTHROPIC_AUTH_TOKEN", "tok", "api_key_present", True),
    ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9", "base_url", "http://127.0.0.1:9"),
    ("ANTHROPIC_BASE_URL", "", "base_url", None),
]


@pytest.mark.parametrize(("var", "value", "attr", "expected"), VALID)
def test_settings_valid(var: str, value: str, attr: str, expected: object) -> None:
    assert getattr(Settings.from_env({var: value}), attr) == expected


MALFORMED = [
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "abc", "must be a positive integer, got 'abc'"),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "0", "must be a positive integer, got '0'"),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "-5", "must be a positive integer, got '-5'"),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "2.5", "got '2.5'"),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "1_000", "got '1_000'"),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "+5", "got '+5'"),
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "٣", "got '٣'"),
    ("SPROUT_AGENT_STOP_MAX_REJECTIONS", "-1", "must be a non-negative integer"),
    ("SPROUT_AGENT_MAX_COMPACTIONS", "many", "must be a non-negative integer"),
    ("SPROUT_AGENT_MAX_PARALLEL_TOOLS", "0", "must be a positive integer"),
    ("SPROUT_AGENT_TOOL_RESULT_MAX_BYTES", "x", "must be a positive"),
    ("SPROUT_AGENT_MAX_OUTPUT_TOKENS", "0", "must be a positive integer"),
    ("SPROUT_AGENT_MAX_CONTEXT_TOKENS", "-1", "must be a positive integer"),
    ("SPROUT_AGENT_SERVER_START_TIMEOUT", "soon", "must be a positive number"),
    ("SPROUT_AGENT_SERVER_START_TIMEOUT", "0", "got '0'"),
    ("SPROUT_AGENT_TOOL_TIMEOUT", "-3", "must be a positive number of seconds"),
    ("SPROUT_AGENT_TOOL_TIMEOUT", "inf", "got 'inf'"),
    ("SPROUT_AGENT_TOOL_TIMEOUT", "nan", "got 'nan'"),
]


@pytest.mark.parametrize(("var", "value", "fragment"), MALFORMED)
def test_settings_malformed(var: str, value: str, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        Settings.from_env({var: value})
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"{var} must be a ") and "\n" not in str(info.value)
    assert info.value.exit_code == 2


def test_env_table_names_every_variable_settings_reads() -> None:
    names = {var.name for var in ENV_VARS}
    assert {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "MCP_HOOK_SERVERS"} <= names
    source = (REPO / "sprout_agent" / "config" / "settings.py").read_text()
    settings_src = source[source.index("class Settings") : source.index("def child_environment")]
    settings_src += (REPO / "sprout_agent" / "config" / "provider.py").read_text()  # Settings.provider's
    settings_src += (REPO / "sprout_agent" / "model" / "providers.py").read_text()  # the Foundry key
    read = {n for n in names if f'"{n}"' in settings_src}
    assert read == names


def test_env_example_is_generated_from_the_table() -> None:
    text = render_env_example()
    assert (REPO / ".env.example").read_text() == text, "regenerate .env.example from render_env_example()"
    assert "\nANTHROPIC_API_KEY=\n" in text
    assert "\n# SPROUT_AGENT_HOOK_TIMEOUT_MS=2500\n" in text
    for var in ENV_VARS:
        assert var.name in text
    active = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert active == ["ANTHROPIC_API_KEY="]
    for var in PROCESS_ENV_VARS:
        assert f"\n# {var.name}={var.default}\n" in text


def _env_names_in(tree: ast.Module) -> set[str]:
    """Every string constant in a module that is a whole variable name of ours."""
    # The last ones: Claude Code's names, and the clouds' (docs/providers.md).
    name = re.compile(
        r"(SPROUT|ANTHROPIC|MCP)_[A-Z0-9_]+|API_TIMEOUT_MS|CLAUDE_CODE_(USE|SKIP|DISABLE|API)_[A-Z0-9_]+|"
        r"AWS_[A-Z0-9_]+|CLOUD_ML_REGION|GCLOUD_PROJECT|GOOGLE_CLOUD_PROJECT"
    )
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and name.fullmatch(node.value)
    }


def test_every_variable_the_code_reads_is_in_one_of_the_two_tables() -> None:
    from sprout_agent.config.files import PYTHON_VARIABLE

    used = set().union(*(_env_names_in(tree) for _path, tree in package_modules()))
    used -= {PYTHON_VARIABLE}  # a config file's variable (docs/configuration.md), never read from the environment
    tables = {var.name for var in (*ENV_VARS, *PROCESS_ENV_VARS)}
    assert used == tables, f"in the code only: {used - tables}; in the tables only: {tables - used}"
    assert not {var.name for var in ENV_VARS} & {var.name for var in PROCESS_ENV_VARS}


def test_the_process_env_table_matches_the_tools_constants() -> None:
    from sprout_agent.tools import _grep
    from sprout_agent.trust import command_runs as _shell
    from sprout_agent.trust import workspace as _paths

    process = {var.name: var.default for var in PROCESS_ENV_VARS}
    assert process[_shell.TIMEOUT_ENV] == f"{_shell.DEFAULT_TIMEOUT:g}"
    assert {_paths.ALLOW_OUTSIDE_ENV, _grep.NO_RG_ENV} <= set(process)


# ---------------------------------------------------------------- child environment


def test_child_environment_keeps_basics_and_drops_secrets() -> None:
    parent = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "XDG_CONFIG_HOME": "/home/u/.config",
        "TMPDIR": "/tmp",
        "HTTPS_PROXY": "http://proxy:3128",
        "ANTHROPIC_API_KEY": "sk-ant-secret",
        "ANTHROPIC_AUTH_TOKEN": "tok",
        "OPENAI_API_KEY": "sk-openai",
        "GITHUB_TOKEN": "ghp",
        "XDG_SESSION_TOKEN": "tok",  # allowed prefix, secret name: dropped
        "AWS_SECRET_ACCESS_KEY": "aws",
        "DB_PASSWORD": "pw",
        "SPROUT_AGENT_TOOL_TIMEOUT": "5",
        "VIRTUAL_ENV": "/work/.venv",
        "RANDOM_THING": "x",
        "SHELL": "() { :; }",  # an exported bash function
    }
    child = child_environment(parent, {"GITHUB_TOKEN": "explicit", "PATH": "/opt/bin"})
    assert child == {
        "PATH": "/opt/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "XDG_CONFIG_HOME": "/home/u/.config",
        "TMPDIR": "/tmp",
        "HTTPS_PROXY": "http://proxy:3128",
        "GITHUB_TOKEN": "explicit",
    }
    assert parent["PATH"] == "/usr/bin"  # input untouched


def test_child_environment_of_the_real_process_has_no_anthropic_key() -> None:
    import os

    child = child_environment({**os.environ, "ANTHROPIC_API_KEY": "sk-ant-x"}, {})
    assert "ANTHROPIC_API_KEY" not in child
    assert child.get("PATH") == os.environ.get("PATH")


def test_the_waiting_notice_may_come_sooner_than_15_s_never_later() -> None:
    assert Settings.from_env({"SPROUT_AGENT_API_WAITING_MS": "500"}).api_waiting_ms == 500
    assert Settings.from_env({}).api_waiting_ms == 15_000
    for wrong in ("15001", "0", "soon"):
        with pytest.raises(UsageError, match="SPROUT_AGENT_API_WAITING_MS"):
            Settings.from_env({"SPROUT_AGENT_API_WAITING_MS": wrong})
