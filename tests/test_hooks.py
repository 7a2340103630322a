"""MCP-driven lifecycle hooks. The rules (allowlist, objections, budget, timeouts, context, trust) are tested
in-process in tests/test_loop.py; here the parsing of the settings, and through the real CLI only what a real
MCP subprocess shows: a hung hook's server and its grandchildren killed on the second timeout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout_agent.config.settings import Settings
from sprout_agent.core.errors import EXIT_USAGE, UsageError
from sprout_agent.core.hooks.calling import Allowlist, parse_allowlist
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import fake_server, pid_alive, result_text, run_agent, tool_results


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("", None),
        ("   ,, ,", None),
        ("*", Allowlist(True, frozenset())),
        ("  *  ", Allowlist(True, frozenset())),
        ("todo", Allowlist(False, frozenset({"todo"}))),
        (" a , b,,c ", Allowlist(False, frozenset({"a", "b", "c"}))),
        ("*,foo", Allowlist(False, frozenset({"*", "foo"}))),
    ],
)
def test_allowlist_parsing(raw: str | None, expected: Allowlist | None) -> None:
    assert parse_allowlist(raw) == expected


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "abc"),
        ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "0"),
        ("SPROUT_AGENT_STOP_MAX_REJECTIONS", "-1"),
    ],
)
def test_malformed_hook_settings_are_a_one_line_usage_error_naming_the_variable(variable: str, value: str) -> None:
    # The CLI prints a UsageError as one line and exits 2 (tests/test_cli.py shows that path end to end).
    with pytest.raises(UsageError) as raised:
        Settings.from_env({variable: value})
    assert variable in str(raised.value) and "\n" not in str(raised.value)
    assert raised.value.exit_code == EXIT_USAGE


def test_hook_settings_defaults_and_zero_budget() -> None:
    defaults = Settings.from_env({})
    assert (defaults.hook_servers, defaults.hook_timeout_ms, defaults.stop_max_rejections) == (None, 2500, 3)
    assert Settings.from_env({"SPROUT_AGENT_STOP_MAX_REJECTIONS": "0"}).stop_max_rejections == 0


@pytest.mark.e2e
def test_a_hanging_hook_is_no_objection_and_the_second_timeout_kills_its_server(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    servers = {
        "slow": fake_server(stop="x", stop_mode="hang", grandchild_pidfile=str(pids)),
        "judge": fake_server(stop_mode="sequence", stop_sequence=["first", "second"]),
    }
    script = [
        reply("done"),
        reply(tool_use("judge__echo", {"text": "1"})),
        reply("done"),
        reply(tool_use("slow__echo", {"text": "2"})),
        reply("done"),
    ]
    env = {"MCP_HOOK_SERVERS": "*", "SPROUT_AGENT_HOOK_TIMEOUT_MS": str(int(bounded(400)))}
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, servers=servers, env=env)
    assert run.code == 0, run.stderr
    assert "timed out (1 in a row)" in run.stderr and "killed" in run.stderr  # progress on stderr
    assert "objected: first" in run.stderr and run.stdout == "done\n"
    (unavailable,) = tool_results(fake.requests[4].body)[-1:]
    assert unavailable["is_error"] and "unavailable" in result_text(unavailable)
    grandchildren = [int(line) for line in pids.read_text().split()]
    assert grandchildren and not any(pid_alive(pid) for pid in grandchildren)
