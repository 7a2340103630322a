"""Cassettes through the real CLI as a process (docs/cassettes.md): `--record DIR` against the fake API, then the fake
stopped and the key gone, `SPROUT_AGENT_REPLAY` (or `--replay`) answers instead; what a person sees of a divergence
and of a broken cassette: one line on stderr and the documented exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.options import Options
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import Run, Terminal, agent_command, agent_env, fake_server, run_agent, write_config
from tests.test_cassettes import Session

pytestmark = pytest.mark.e2e
TOOLS = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}
VOLATILE = {"session_id", "uuid", "duration_ms", "duration_api_ms", "apiKeySource", "provider"}  # no key, no endpoint


def without_key(tmp_path: Path, args: list[str], env: dict[str, str]) -> Run:
    """The agent with no key and no fake: ANTHROPIC_BASE_URL is a closed port, so a request sent would fail."""
    with FakeAnthropic() as gone:
        closed = gone.base_url
    return run_agent(tmp_path, args, fake=None, env={**env, "ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": closed})


def same(out: str, *cwds: Path) -> list[Any]:
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            for cwd in cwds:
                value = value.replace(str(cwd), "<cwd>")
        return value

    return [walk(json.loads(line)) for line in out.splitlines() if line.strip()]


def test_the_cli_records_with_a_flag_and_replays_from_the_variable_with_no_key_and_no_api(tmp_path: Path) -> None:
    a, b, tapes = tmp_path / "a", tmp_path / "b", tmp_path / "tapes"
    a.mkdir()
    b.mkdir()
    script = [reply(tool_use("dev__write", {"file_path": "out.txt", "content": "made\n"})), reply("Made out.txt.")]
    args = ["-p", "make out.txt", "--output-format", "stream-json", "--verbose"]
    with FakeAnthropic(script) as fake:
        recorded = run_agent(tmp_path, [*args, "--cwd", str(a), "--record", str(tapes)], fake=fake, env=TOOLS)
    assert recorded.code == 0, recorded.stderr
    (cassette,) = tapes.glob("*.jsonl")
    replayed = without_key(tmp_path, [*args, "--cwd", str(b)], {**TOOLS, "SPROUT_AGENT_REPLAY": str(cassette)})
    assert replayed.code == 0, replayed.stderr
    assert same(replayed.stdout, a, b) == same(recorded.stdout, a, b)
    assert (b / "out.txt").read_text() == (a / "out.txt").read_text() == "made\n"


def test_a_divergence_is_one_line_and_exit_6_in_the_result_too(tmp_path: Path) -> None:
    tapes = tmp_path / "tapes"
    with FakeAnthropic([reply("hi")]) as fake:
        assert run_agent(tmp_path, ["-p", "hello", "--record", str(tapes)], fake=fake).code == 0
    replayed = without_key(tmp_path, ["-p", "hullo", "--output-format", "json", "--replay", str(tapes)], {})
    assert replayed.code == 6
    (line,) = replayed.stderr.strip().splitlines()
    assert line.startswith("sprout-agent: replay: request 1 differs from the recording (exchange 1, line 2) at ")
    assert line.endswith('body.messages[0].content[0].text: recorded "hello", sent "hullo"')
    result = json.loads(replayed.stdout)
    assert result["exit_code"] == 6 and result["is_error"] is True


@pytest.mark.slow  # about 3 s of CPU: the agent as a process, the dev server twice (CI runs it)
def test_a_hand_edited_cassette_that_makes_the_agent_send_what_the_api_refuses_is_one_line_and_exit_6(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy-paste slip in a cassette: the second call given the first call's id. Strict matching compares ids by
    which call they name, so the requests still match; the replay's API rules refuse the history the agent sends."""
    session = Session(tmp_path, monkeypatch, Options("read a.txt twice"))
    session.env = TOOLS
    (session.a / "a.txt").write_text("a\n")
    (session.b / "a.txt").write_text("a\n")
    read = {"file_path": "a.txt"}
    script = [reply(tool_use("dev__read", read, id="toolu_a")), reply(tool_use("dev__read", read, id="toolu_b")), "ok"]
    recorded, _ = session.record([reply(step) if isinstance(step, str) else step for step in script])
    assert recorded.code == 0, recorded.stderr
    (cassette,) = session.tapes.glob("*.jsonl")
    cassette.write_text(cassette.read_text().replace('"toolu_b"', '"toolu_a"'))
    replayed = without_key(
        tmp_path, ["-p", "read a.txt twice", "--cwd", str(session.b), "--replay", str(cassette)], TOOLS
    )
    assert replayed.code == 6
    (line,) = [line for line in replayed.stderr.splitlines() if line.startswith("sprout-agent:")]
    assert line == (
        "sprout-agent: replay: request 3 (exchange 3, line 6) is one the API would refuse: messages.3.content.0.id: "
        "tool_use ids must be unique, 'toolu_a' is repeated"
    )


def test_a_truncated_cassette_is_one_line_and_exit_2_before_anything_starts(tmp_path: Path) -> None:
    tapes = tmp_path / "tapes"
    with FakeAnthropic([reply("hi")]) as fake:
        assert run_agent(tmp_path, ["-p", "hello", "--record", str(tapes)], fake=fake).code == 0
    (cassette,) = tapes.glob("*.jsonl")
    cassette.write_bytes(cassette.read_bytes()[:-40])
    replayed = without_key(tmp_path, ["-p", "hello", "--replay", str(cassette)], {})
    assert replayed.code == 2
    (line,) = replayed.stderr.strip().splitlines()
    assert line.startswith(f"sprout-agent: cassette {cassette}: line 3 is not JSON (")
    assert line.endswith("): truncated or edited by hand? record it again")


@pytest.mark.slow
def test_replay_reports_a_tool_result_that_changed_a_call_refused_and_a_hook_that_objects_now(tmp_path: Path) -> None:
    repo, tapes = tmp_path / "repo", tmp_path / "tapes"
    repo.mkdir()
    (repo / "data.txt").write_text("v1\n")
    script = [reply(tool_use("dev__read", {"file_path": "data.txt"}, id="toolu_read")), reply("It says v1.")]
    with FakeAnthropic(script) as fake:
        recorded = run_agent(
            tmp_path, ["-p", "read data.txt", "--cwd", str(repo), "--record", str(tapes)], fake=fake, env=TOOLS
        )
    assert recorded.code == 0, recorded.stderr
    (cassette,) = tapes.glob("*.jsonl")
    env = {**TOOLS, "SPROUT_AGENT_RECORD": str(tapes)}  # a session named by id is found where sessions are recorded

    def replay(*args: str, extra: dict[str, str] | None = None) -> Run:
        return without_key(tmp_path, ["replay", cassette.stem, "--cwd", str(repo), *args], {**env, **(extra or {})})

    same = replay()
    assert (same.code, same.stdout) == (0, f"replay of {cassette}: 2 of 2 recorded request(s) made; no divergence\n")
    (repo / "data.txt").write_text("v2\n")
    changed = replay()
    assert changed.code == 6, changed.stderr
    assert changed.stdout.splitlines()[1:] == [
        '  exchange 2: tool result: dev__read {"file_path": "data.txt"}: result changed: recorded "     1\\tv1", '
        'now "     1\\tv2"'
    ]
    refused = replay("--deny-tools", "dev__read")
    assert (
        refused.code == 6
        and '  exchange 2: refused: dev__read {"file_path": "data.txt"}: refused now' in refused.stdout
    )
    hooks = write_config(tmp_path, {"guard": fake_server(stop="the tests are red")})
    objecting = replay("--config", str(hooks), extra={"MCP_HOOK_SERVERS": "guard"})
    assert objecting.code == 6
    assert '  the run: hook: _Stop from guard objects now: "the tests are red"' in objecting.stdout
    assert "  the run: ended: replay: request 3 has no answer: the cassette recorded 2 requests" in objecting.stdout


@pytest.mark.slow  # eight processes: the batch and its three task agents, twice (about 15 s of CPU here)
def test_a_batch_of_three_recorded_once_replays_task_by_task_with_no_key(tmp_path: Path) -> None:
    names = ("one", "two", "three")
    tasks = [{"id": name, "prompt": f"say {name}"} for name in names]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(task) + "\n" for task in tasks))

    def route(body: dict[str, Any]) -> Any:
        said = json.dumps(body["messages"])
        return reply(next(name.upper() for name in names if f"say {name}" in said))

    tapes = tmp_path / "tapes"
    batch = ["batch", "tasks.jsonl", "-j", "3", "--output-format", "json"]
    with FakeAnthropic([route] * 3) as fake:
        recorded = run_agent(tmp_path, [*batch, "--out", "first"], fake=fake, env={"SPROUT_AGENT_RECORD": str(tapes)})
    assert recorded.code == 0, recorded.stderr
    assert sorted(path.name for path in tapes.iterdir()) == ["one.jsonl", "three.jsonl", "two.jsonl"]  # by task
    replayed = without_key(tmp_path, [*batch, "--out", "second"], {"SPROUT_AGENT_REPLAY": str(tapes)})
    assert replayed.code == 0, replayed.stderr

    def results(out: str) -> dict[str, str]:
        lines = (tmp_path / out / "results.jsonl").read_text().splitlines()
        return {record["id"]: record["result"] for record in map(json.loads, lines)}

    assert results("second") == results("first") == {"one": "ONE", "two": "TWO", "three": "THREE"}


@pytest.mark.slow
def test_an_interactive_session_recorded_on_a_terminal_replays_there_with_no_key(tmp_path: Path) -> None:
    tapes = tmp_path / "tapes"

    def session(args: list[str], env: dict[str, str]) -> int:
        term = Terminal(agent_command(args), env, tmp_path)
        try:
            term.expect("›")
            term.send("first question\r")
            term.expect("first answer")
            term.send("second question\r")
            term.expect("second answer")
            term.seen = ""
            term.expect("›")
            term.send("\x04")  # Ctrl-D leaves
        finally:
            code = term.close()
        return code

    with FakeAnthropic([reply("first answer"), reply("second answer")]) as fake:
        assert session(["--record", str(tapes)], agent_env(tmp_path, fake)) == 0
    with FakeAnthropic() as gone:
        closed = gone.base_url
    no_key = {"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": closed}
    assert session(["--replay", str(tapes)], agent_env(tmp_path, None, no_key)) == 0
