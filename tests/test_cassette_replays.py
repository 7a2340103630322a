"""Replays in-process beyond a `-p` turn (docs/cassettes.md, "What is covered"): a session with a checkpoint whose
replay `sessions rewind` rewinds to the same files, a prompt over ACP whose replay sends the editor the same session
updates, and the API's rules on every request a replay serves (sprout_agent/model/cassettes/api_check.py): a hand-edited
cassette that strict matching lets through still fails when the request it makes the agent send is one the API
refuses."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.faces.acp.session_template import AcpSetup
from sprout_agent.faces.cli.commands import session_rewind
from tests.acp_harness import EditorClient
from tests.acp_pipes import sdk_agent
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.fake_providers import FakeBedrock, FakeVertex, event_stream_message
from tests.harness import agent_env
from tests.headless_here import headless
from tests.test_cassettes import NO_KEY, Session, cassette_of, records

DEV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}


@pytest.mark.e2e
def test_a_replay_whose_edited_cassette_makes_the_agent_send_what_the_api_refuses_fails_though_strict_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Strict matching compares tool call ids by which call they name, so a cassette edited to give a call an id the
    API never accepts (a space in it) still matches; the replay's own API rules see the id the agent sends back and
    refuse it: exit 6, one line naming the first problem as a path."""
    session = Session(tmp_path, monkeypatch, Options("write hello.txt"))
    session.env = DEV
    script = [reply(tool_use("dev__write", {"file_path": "hello.txt", "content": "hi\n"}, id="toolu_w")), reply("ok")]
    recorded, _ = session.record(script)
    assert recorded.code == 0, recorded.stderr
    cassette = cassette_of(session.tapes)
    cassette.write_text(cassette.read_text().replace('"toolu_w"', '"toolu w"'))
    replayed = session.replay()
    assert replayed.code == 6
    refused = "replay: request 2 (exchange 2, line 4) is one the API would refuse: messages.1.content.0.id: 'toolu w'"
    assert [line for line in replayed.stderr.splitlines() if "would refuse" in line] == [
        f"sprout-agent: {refused} does not match ^[a-zA-Z0-9_-]+$"
    ]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def committed(path: Path) -> None:
    git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("print('v1')\n")
    git(path, "add", "app.py")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")


def files(path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(path.iterdir()) if p.is_file()}


@pytest.mark.e2e
def test_a_replayed_session_takes_the_same_checkpoint_and_sessions_rewind_gives_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = Session(tmp_path, monkeypatch, Options("update the app", output_format="stream-json", verbose=True))
    session.env = DEV
    committed(session.a)
    committed(session.b)
    script = [
        reply(tool_use("dev__read", {"file_path": "app.py"}, id="toolu_r")),  # dev's write wants a read first
        reply(tool_use("dev__write", {"file_path": "app.py", "content": "print('v2')\n"}, id="toolu_w1")),
        reply(tool_use("dev__write", {"file_path": "new.txt", "content": "a\n"}, id="toolu_w2")),
        reply("Updated."),
    ]
    recorded, _ = session.record(script)
    assert recorded.code == 0, recorded.stderr
    replayed = session.replay()
    assert replayed.code == 0, replayed.stderr
    assert files(session.b) == files(session.a) == {"app.py": "print('v2')\n", "new.txt": "a\n"}

    def result(out: str) -> dict[str, Any]:
        return [line for line in map(json.loads, out.splitlines()) if line["type"] == "result"][-1]

    first, second = result(recorded.stdout), result(replayed.stdout)
    assert first["session_id"] != second["session_id"]
    assert second["checkpoint"] == first["checkpoint"] and first["checkpoint"]["turn"] == 1
    given = {"files_only": True, "conversation_only": False, "include": (), "dry_run": False, "as_json": True}
    capsys.readouterr()
    for run in (first, second):
        assert session_rewind.rewind_command(run["session_id"], 1, **given) == 0
    rewound = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rewound[0]["restored"] == rewound[1]["restored"] == ["app.py", "new.txt"]
    assert files(session.b) == files(session.a) == {"app.py": "print('v1')\n"}
    assert git(session.b, "status", "--porcelain") == git(session.a, "status", "--porcelain") == ""


@asynccontextmanager
async def editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: EditorClient, env: dict[str, str]
) -> AsyncIterator[Any]:
    """The ACP SDK as the editor of the server in this process, the session's environment `env` (tests/test_acp.py)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    locations = Locations(None, tmp_path / "data" / "sessions", tmp_path / "data", None)
    async with sdk_agent(client, AcpSetup(Options(), locations)) as conn:
        yield conn


async def acp_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cwd: Path, env: dict[str, str]) -> list[Any]:
    """One prompt over ACP in `cwd`: the session's updates as JSON, its id and the working directory put aside."""
    from acp import PROTOCOL_VERSION, text_block

    client = EditorClient()
    async with editor(tmp_path, monkeypatch, client, env) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        done = await conn.prompt(session_id=session_id, prompt=[text_block("what does notes.txt say?")])
    assert done.stop_reason == "end_turn"
    updates = [u.model_dump(mode="json", exclude_none=True) for u in client.of(session_id)]
    return json.loads(json.dumps(updates).replace(session_id, "<session>").replace(str(cwd), "<cwd>"))


@pytest.mark.anyio
async def test_a_prompt_over_acp_recorded_replays_to_the_same_session_updates_with_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, tapes = tmp_path / "a", tmp_path / "b", tmp_path / "cassettes"
    for where in (a, b):
        where.mkdir()
        (where / "notes.txt").write_text("alpha\n")
    script = [reply("Reading.", tool_use("dev__read", {"file_path": "notes.txt"}, id="toolu_n")), reply("It: alpha.")]
    with FakeAnthropic(script) as fake:
        env = agent_env(tmp_path, fake, {**DEV, "SPROUT_AGENT_RECORD": str(tapes)})
        live = await acp_prompt(tmp_path, monkeypatch, a, env)
    assert [line["type"] for line in records(cassette_of(tapes))] == ["cassette", *["request", "response"] * 2]
    monkeypatch.delenv("SPROUT_AGENT_RECORD")
    replay = agent_env(tmp_path, None, {**DEV, **NO_KEY, "SPROUT_AGENT_REPLAY": str(tapes)})
    monkeypatch.delenv("ANTHROPIC_BASE_URL")  # a request that left the process would fail
    replayed = await acp_prompt(tmp_path, monkeypatch, b, replay)
    assert replayed == live
    done = [u for u in replayed if u.get("tool_call_id") == "toolu_n" and u.get("status") == "completed"]
    assert done[0]["content"][0]["content"]["text"] == "     1\talpha"  # the read ran for real, in b
    assert "".join(u["content"]["text"] for u in replayed if u["session_update"] == "agent_message_chunk") == (
        "Reading.It: alpha."
    )


@pytest.mark.e2e
def test_a_bedrock_session_is_recorded_as_readable_events_without_the_credential_it_streamed_and_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bedrock's answer is binary (AWS event-stream frames, each event base64 inside): recorded as the events it
    carries, a credential the model streamed in pieces is filtered as on the first party's SSE (base64 hid it from
    the filter), and a replay frames them again for the SDK's Bedrock client, with no AWS credentials. Recording
    signs as ever: the recorder's identity encoding is a client header, set before the request is signed."""
    token = "ghp_" + "z9y8x7w6v5" * 4
    keys = ("AKIAOLDOLDOLDOLDOLD1", "old-secret-key-0123456789")
    credentials = tmp_path / "aws-credentials"
    credentials.write_text(f"[work]\naws_access_key_id = {keys[0]}\naws_secret_access_key = {keys[1]}\n")
    aws = {
        "CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "eu-west-1", "AWS_PROFILE": "work",
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
    }  # fmt: skip
    session = Session(tmp_path, monkeypatch, Options("write it", model="sonnet"))
    session.env = {**DEV, **aws}
    script = [
        reply(tool_use("dev__write", {"file_path": "it.txt", "content": "it\n"}, id="toolu_b")),
        reply(f"Wrote it; the token was {token}."),
    ]
    with FakeBedrock(script, region="eu-west-1", accept=keys) as fake:
        session.env["ANTHROPIC_BEDROCK_BASE_URL"] = fake.base_url
        options = replace(session.options, cwd=session.a, record=session.tapes)
        recorded = headless(tmp_path, monkeypatch, options, fake=None, servers={}, env=session.env)
    assert recorded.code == 0 and fake.refusals == [], recorded.stderr
    text = cassette_of(session.tapes).read_text()
    assert token not in text and base64.b64encode(token.encode()).decode()[:20] not in text
    answers = [line for line in records(cassette_of(session.tapes)) if line["type"] == "response"]
    assert answers[0]["headers"]["content-type"] == "application/vnd.amazon.eventstream"
    events = answers[1]["events"]
    assert (events[0]["event"], events[-1]["event"]) == ("message_start", "message_stop")
    deltas = [e["data"]["delta"]["text"] for e in events if e["event"] == "content_block_delta"]
    assert deltas == ["Wrote it; the token was [redacted]."]  # streamed in pieces, filtered whole
    session.env["ANTHROPIC_BEDROCK_BASE_URL"] = fake.base_url  # stopped: a request that left would fail
    for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_PROFILE"):  # and no AWS credentials: nothing is signed for AWS
        del session.env[name]
    replayed = session.replay()
    assert (replayed.code, replayed.stdout) == (0, "Wrote it; the token was [redacted].\n"), replayed.stderr
    assert (session.b / "it.txt").read_text() == "it\n"


def test_bedrock_frames_read_back_as_their_events_and_frame_again_byte_for_byte_until_a_cut_one() -> None:
    from sprout_agent.model.cassettes.eventstream import parse_event_stream, render_event_stream

    start = {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}}
    chunk = {"bytes": base64.b64encode(json.dumps(start, separators=(",", ":")).encode()).decode()}
    chunk_frame = event_stream_message(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
        json.dumps(chunk).encode(),
    )
    throttled = {":exception-type": "throttlingException", ":content-type": "application/json"}
    exception = event_stream_message({**throttled, ":message-type": "exception"}, b'{"message":"Too many requests"}')
    events = parse_event_stream(chunk_frame + exception + exception[:-9])  # the last one cut mid-message
    assert events == [
        {"event": "message_start", "data": start},
        {"event": ":exception", "headers": {**throttled, ":message-type": "exception"},
         "data": {"message": "Too many requests"}},
    ]  # fmt: skip
    assert b"".join(render_event_stream(events)) == chunk_frame + exception
    corrupt = bytearray(chunk_frame)
    corrupt[-20] ^= 1  # a payload byte: the message's checksum no longer holds
    assert parse_event_stream(bytes(corrupt)) == []


@pytest.mark.e2e  # the checkpoint of the write runs git
def test_a_vertex_session_replays_with_no_google_credentials_and_no_credential_command_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay sends nothing, so it asks for no credential: a Vertex session recorded with a service account's key
    replays where no Google credentials exist (CI), and your settings' commands that fetch credentials are not run
    (here one that would fail: a replay started it only to throw its key away)."""
    session = Session(tmp_path, monkeypatch, Options("write it", model="sonnet"))
    script = [
        reply(tool_use("dev__write", {"file_path": "it.txt", "content": "it\n"}, id="toolu_v")),
        reply("Wrote it."),
    ]
    with FakeVertex(script, project="proj-1", region="us-east5") as fake:
        adc = tmp_path / "adc.json"
        adc.write_text(json.dumps(fake.credentials()))
        vertex = {
            "CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "proj-1",
            "ANTHROPIC_VERTEX_BASE_URL": f"{fake.base_url}/v1",
        }  # fmt: skip
        session.env = {**DEV, **vertex, "GOOGLE_APPLICATION_CREDENTIALS": str(adc)}
        options = replace(session.options, cwd=session.a, record=session.tapes)
        recorded = headless(tmp_path, monkeypatch, options, fake=None, servers={}, env=session.env)
    assert recorded.code == 0 and fake.refusals == [] and len(fake.requests) == 2, recorded.stderr
    (tmp_path / ".claude").mkdir()  # your own settings (HOME is tmp_path): a gcpAuthRefresh that fails
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"gcpAuthRefresh": "exit 3"}))
    session.env = {**DEV, **vertex}  # no GOOGLE_APPLICATION_CREDENTIALS, and the fake is stopped
    replayed = session.replay()
    assert (replayed.code, replayed.stdout) == (0, "Wrote it.\n"), replayed.stderr
    assert (session.b / "it.txt").read_text() == "it\n"
