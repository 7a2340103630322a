"""Cassettes through the real CLI as a process (docs/cassettes.md): `--record DIR` against the fake API, then the fake
stopped and the key gone, `SPROUT_AGENT_REPLAY` (or `--replay`) answers instead; what a person sees of a divergence
and of a broken cassette: one line on stderr and the documented exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import Run, run_agent

pytestmark = pytest.mark.e2e
TOOLS = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}
VOLATILE = {"session_id", "uuid", "duration_ms", "duration_api_ms", "apiKeySource"}


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
