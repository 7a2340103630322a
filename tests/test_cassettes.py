"""Cassettes in-process (docs/cassettes.md): a session recorded against the fake API replays with the fake stopped and
no key to the same stdout, stream-json (ids aside), files and exit code; strict replay fails a request that differs
with the first difference as a path and both values; lenient answers by position with one warning; a cassette never
holds a credential; a truncated or hand-edited one is one clear error. The CLI as a process: test_cassettes_e2e.py."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.files import ServerConfig
from sprout_agent.config.options import Options
from sprout_agent.core.limits import Limits
from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import API_KEY, Run
from tests.headless_here import headless
from tests.inproc_fake import fake_in_process
from tests.stream_schema import valid_lines

NO_KEY = {"ANTHROPIC_API_KEY": ""}  # and no ANTHROPIC_BASE_URL: a request that left the process would fail
VOLATILE = {"session_id", "uuid", "duration_ms", "duration_api_ms", "apiKeySource", "provider"}  # no key, no endpoint


def cassette_of(directory: Path) -> Path:
    (path,) = directory.glob("*.jsonl")
    return path


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class Session:
    """One scripted session recorded in `a/`, then replayed in a fresh `b/`: each run in its own working directory."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: Options) -> None:
        self.tmp, self.monkeypatch, self.options = tmp_path, monkeypatch, options
        self.a, self.b, self.tapes = tmp_path / "a", tmp_path / "b", tmp_path / "cassettes"
        self.a.mkdir()
        self.b.mkdir()
        self.env: dict[str, str] = {}
        self.in_process: Sequence[ServerConfig] = ()

    def record(self, script: Sequence[Step], **options: Any) -> tuple[Run, FakeAnthropic]:
        with FakeAnthropic(script) as fake:
            chosen = replace(self.options, cwd=self.a, record=self.tapes, **options)
            run = headless(
                self.tmp, self.monkeypatch, chosen, fake=fake, servers={}, env=self.env, in_process=self.in_process
            )
        return run, fake

    def replay(self, **options: Any) -> Run:
        chosen = replace(self.options, cwd=self.b, replay=self.tapes, **options)
        env = {**self.env, **NO_KEY}
        return headless(self.tmp, self.monkeypatch, chosen, fake=None, servers={}, env=env, in_process=self.in_process)

    def same(self, text: str) -> str:
        return text.replace(str(self.a), "<cwd>").replace(str(self.b), "<cwd>")


def comparable_lines(session: Session, out: str) -> list[Any]:
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return session.same(value) if isinstance(value, str) else value

    return [walk(line) for line in valid_lines(out)]


@pytest.mark.e2e
def test_a_tool_round_replays_with_the_fake_stopped_and_no_key_to_the_same_stdout_files_and_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session(tmp_path, monkeypatch, Options("write hello.txt"))
    session.env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}
    script = [reply(tool_use("dev__write", {"file_path": "hello.txt", "content": "hi there\n"})), reply("Wrote it.")]
    recorded, fake = session.record(script)
    assert recorded.code == 0, recorded.stderr
    replayed = session.replay()
    assert (replayed.code, replayed.stdout) == (0, "Wrote it.\n"), replayed.stderr
    assert (session.b / "hello.txt").read_text() == (session.a / "hello.txt").read_text() == "hi there\n"
    lines = records(cassette_of(session.tapes))
    assert [line["type"] for line in lines] == ["cassette", "request", "response", "request", "response"]
    assert lines[1]["body"] == fake.requests[0].body  # the request as sent, whole
    assert fake.requests[0].headers["accept-encoding"] == "identity"  # asked for uncompressed, before any signing
    assert lines[2]["events"][0]["event"] == "message_start" and lines[2]["events"][-1]["event"] == "message_stop"


def test_stream_json_replays_line_for_line_ids_aside_for_a_hook_objection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session(tmp_path, monkeypatch, Options("finish up", output_format="stream-json", verbose=True))
    session.env = {"MCP_HOOK_SERVERS": "fake", "SPROUT_AGENT_STOP_MAX_REJECTIONS": "1"}
    session.in_process = [fake_in_process(stop="tests are still red")]
    script = [reply("Done, I think."), reply("Now it is done.")]
    recorded, fake = session.record(script)
    assert recorded.code == 0, recorded.stderr
    assert "tests are still red" in json.dumps(fake.requests[1].body)  # the hook objected, as recorded
    replayed = session.replay()
    assert replayed.code == recorded.code
    assert comparable_lines(session, replayed.stdout) == comparable_lines(session, recorded.stdout)


@pytest.mark.e2e
def test_compaction_replays_its_summary_request_from_the_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session(tmp_path, monkeypatch, Options("please echo", output_format="json"))
    session.env = {"SPROUT_AGENT_MAX_CONTEXT_TOKENS": "10000", "SPROUT_AGENT_MAX_OUTPUT_TOKENS": "1000"}
    session.in_process = [fake_in_process()]
    script = [
        reply(tool_use("fake__echo", {"text": "x" * 400}), usage={"input_tokens": 7000, "output_tokens": 300}),
        reply("## Summary\nEchoed once."),
        reply("The answer is 42.", usage={"input_tokens": 900}),
    ]
    recorded, fake = session.record(script)
    assert recorded.code == 0 and len(fake.requests) == 3, recorded.stderr
    replayed = session.replay()
    assert replayed.code == 0, replayed.stderr
    assert comparable_lines(session, replayed.stdout) == comparable_lines(session, recorded.stdout)
    assert json.loads(replayed.stdout)["result"] == "The answer is 42."


@pytest.mark.e2e
def test_a_subagents_requests_are_in_the_cassette_and_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = Session(tmp_path, monkeypatch, Options("where is --json?", output_format="stream-json", verbose=True))
    session.env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,agent", "SPROUT_AGENT_SANDBOX": "off"}
    for where in (session.a, session.b):
        (where / "cli.py").write_text("def main():\n    parse('--json')\n")
    task = {"description": "find the flag", "prompt": "Where is --json handled?", "subagent_type": "Explore"}
    script = [
        reply(tool_use("agent__task", task, id="toolu_task")),
        reply(tool_use("dev__grep", {"pattern": "--json"}, id="toolu_grep")),
        reply("--json is handled in cli.py:2"),
        reply("It is in cli.py."),
    ]
    recorded, _ = session.record(script)
    assert recorded.code == 0, recorded.stderr
    models = [line["body"]["model"] for line in records(cassette_of(session.tapes)) if line["type"] == "request"]
    assert "claude-haiku-5-5" in models  # the child's own requests, in the session's cassette
    replayed = session.replay()
    assert replayed.code == 0, replayed.stderr
    assert comparable_lines(session, replayed.stdout) == comparable_lines(session, recorded.stdout)


def recorded_hello(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prompt: str = "say hi") -> Session:
    session = Session(tmp_path, monkeypatch, Options(prompt))
    session.in_process = [fake_in_process()]
    recorded, _ = session.record([reply(tool_use("fake__echo", {"text": "hi"})), reply("hello")])
    assert recorded.code == 0, recorded.stderr
    return session


@pytest.mark.e2e
def test_a_changed_prompt_fails_strict_replay_with_the_path_and_both_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = recorded_hello(tmp_path, monkeypatch)
    replayed = session.replay(prompt="say ho")
    assert replayed.code == 6
    assert (
        "replay: request 1 differs from the recording (exchange 1, line 2) at body.messages[0].content[0].text: "
        'recorded "say hi", sent "say ho"'
    ) in replayed.stderr


@pytest.mark.e2e
def test_a_changed_tool_list_fails_strict_replay_with_a_readable_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = recorded_hello(tmp_path, monkeypatch)
    session.in_process = [fake_in_process(name="other")]  # the same tools, under another server's name
    replayed = session.replay()
    assert replayed.code == 6
    assert 'at body.tools[0].name: recorded "fake__echo", sent "other__echo"' in replayed.stderr


@pytest.mark.e2e
def test_lenient_replay_answers_a_changed_request_by_position_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = recorded_hello(tmp_path, monkeypatch)
    replayed = session.replay(prompt="say ho", replay_mode="lenient")
    assert (replayed.code, replayed.stdout) == (0, "hello\n"), replayed.stderr
    assert replayed.stderr.count("answering by position (lenient)") == 1  # both requests differ: one warning
    assert 'recorded "say hi", sent "say ho"' in replayed.stderr


@pytest.mark.e2e
def test_a_run_that_ends_before_the_recording_does_fails_strict_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = recorded_hello(tmp_path, monkeypatch)
    replayed = session.replay(limits=Limits(max_requests=1))  # the tool round's second request is never made
    assert replayed.code == 6
    assert (
        "replay: the run ended with 1 recorded request(s) not made; the first: exchange 2 (line 4)" in replayed.stderr
    )


@pytest.mark.e2e
def test_no_credential_reaches_a_cassette(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "ghp_" + "a1b2c3d4e5" * 4
    server_secret = "s3rv3r-credential-value-42"
    session = Session(tmp_path, monkeypatch, Options(f"use the token {token} please"))
    session.in_process = [replace(fake_in_process(), env={"SERVICE_PASSWORD": server_secret})]
    script = [
        reply(tool_use("fake__echo", {"text": f"{server_secret} and {API_KEY}"})),
        reply(f"done with {token} and {server_secret}"),
    ]
    recorded, fake = session.record(script)
    assert recorded.code == 0, recorded.stderr
    sent = json.dumps([r.headers for r in fake.requests])
    assert API_KEY in sent  # the fake saw the key; the cassette must not
    text = cassette_of(session.tapes).read_text()
    for secret in (API_KEY, token, server_secret):
        assert secret not in text
    assert "x-api-key" not in text.lower() and "authorization" not in text.lower()
    assert "[redacted]" in text
    # A key the API streamed in pieces (4 characters a delta, here) is caught whole. The run's requests are compared
    # through the same filter: the redacted cassette still replays strictly.
    replayed = session.replay()
    assert (replayed.code, replayed.stdout) == (0, "done with [redacted] and [redacted]\n"), replayed.stderr


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda lines: [*lines[:-1], lines[-1][: len(lines[-1]) // 2]], "line 5 is not JSON"),
        (lambda lines: lines[:-1], "request 2 (line 4) has no answer: truncated?"),
        (lambda lines: [lines[0], lines[2], lines[1], *lines[3:]], "line 2 should be a request, is 'response'"),
        (
            lambda lines: [lines[0].replace('"version":1', '"version":9'), *lines[1:]],
            "version 9; this sprout-agent reads",
        ),
        (
            lambda lines: [lines[0], lines[1], lines[2].replace('"events"', '"evens"'), *lines[3:]],
            "one of events, body",
        ),
    ],
    ids=["truncated mid-line", "an answer cut off", "lines swapped", "another version", "a field renamed"],
)
@pytest.mark.e2e
def test_a_truncated_or_hand_edited_cassette_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[list[str]], list[str]], error: str
) -> None:
    from sprout_agent.core.errors import CassetteError

    session = recorded_hello(tmp_path, monkeypatch)
    path = cassette_of(session.tapes)
    path.write_text("\n".join(edit(path.read_text().splitlines())) + "\n")
    with pytest.raises(CassetteError, match=re.escape(error)) as raised:
        session.replay()
    assert raised.value.exit_code == 2 and str(raised.value).startswith(f"cassette {path}: ")


def test_a_repositorys_env_file_cannot_turn_recording_or_replay_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session(tmp_path, monkeypatch, Options("hi"))
    leak, fake_tape = tmp_path / "leak", tmp_path / "theirs.jsonl"
    (session.a / ".env").write_text(f"SPROUT_AGENT_RECORD={leak}\nSPROUT_AGENT_REPLAY={fake_tape}\n")
    with FakeAnthropic([reply("hello")]) as fake:
        run = headless(tmp_path, monkeypatch, replace(session.options, cwd=session.a), fake=fake, servers={})
    assert (run.code, run.stdout) == (0, "hello\n"), run.stderr  # the API answered, not a cassette
    assert not leak.exists()
    assert "SPROUT_AGENT_RECORD" in run.stderr and "SPROUT_AGENT_REPLAY" in run.stderr  # each ignored, with a notice


def test_a_fifo_put_where_a_cassette_should_be_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout_agent.core.errors import CassetteError

    session = Session(tmp_path, monkeypatch, Options("hi"))
    session.tapes.mkdir()
    os.mkfifo(session.tapes / "theirs.jsonl")  # a repository's: reading it would block the run forever
    with pytest.raises(CassetteError, match=r"theirs\.jsonl is a FIFO \(named pipe\), not a regular file"):
        session.replay()
