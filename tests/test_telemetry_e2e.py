"""Telemetry as a process exports it: the CLI sends traces, metrics and logs over OTLP/HTTP to a receiver in the
test, which decodes the real protobuf; the MCP server's own span (a Python server with its SDK's tracing on) is in
our trace, under our tool call's span, and a command the agent runs gets TRACEPARENT."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import ROOT, agent_command, agent_env, fake_server, run_agent, write_config
from tests.otlp_receiver import Received, Receiver

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
SERVER = str(Path(__file__).with_name("traced_mcp_server.py"))


def ancestors(span: Received, spans: list[Received]) -> list[str]:
    by_id = {s.span_id: s for s in spans}
    names: list[str] = []
    while span.parent_id and (parent := by_id.get(span.parent_id)) is not None:
        names.append(parent.name)
        span = parent
    return names


def test_a_tool_calls_span_holds_the_mcp_servers_own_span_in_one_trace(tmp_path: Path) -> None:
    script = [
        reply(tool_use("traced__work", {}, id="toolu_work")),
        reply(tool_use("dev__bash", {"command": "echo TP=$TRACEPARENT"}, id="toolu_bash")),
        reply("done"),
    ]
    with Receiver() as receiver, FakeAnthropic(script) as fake:
        otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        config = write_config(tmp_path, {"traced": {"command": sys.executable, "args": [SERVER], "env": otel}})
        env = {
            **otel,
            "SPROUT_AGENT_TELEMETRY": "1",
            "SPROUT_AGENT_BUILTIN_SERVERS": "dev",
            "SPROUT_AGENT_SANDBOX": "off",
        }
        run = run_agent(tmp_path, ["--config", str(config), "-p", "go"], fake=fake, env=env)
        assert run.code == 0, run.stderr
    ours = [s for s in receiver.spans if s.service == "sprout-agent"]
    names = [s.name for s in ours]
    assert {"session", "invoke_agent sprout-agent", "execute_tool traced__work", "execute_tool dev__bash"} <= set(names)
    assert len({s.trace_id for s in ours}) == 1  # one trace: the session's (start-up included)
    (served,) = [s for s in receiver.spans if s.service == "traced-mcp-server" and s.name == "tools/call work"]
    assert "execute_tool traced__work" in ancestors(served, receiver.spans)
    assert ancestors(served, receiver.spans)[-1] == "session"
    trace_id = ours[0].trace_id
    bash = fake.requests[2].body["messages"][-1]["content"][0]
    assert f"TP=00-{trace_id}-" in str(bash)  # the command joined the trace
    assert "sprout.tokens" in receiver.metrics and "sprout.tool.calls" in receiver.metrics


def test_a_collector_that_cannot_be_reached_costs_one_notice_and_not_the_run(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with FakeAnthropic([reply("done")]) as fake:
        # A short export timeout: the test is about what is said and the exit code, not how long exports wait.
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": closed,
            "SPROUT_AGENT_TELEMETRY": "1",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "0.3",
        }
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, env=env)
    assert run.code == 0 and run.stdout.strip() == "done", run.stderr
    said = [line for line in run.stderr.splitlines() if "telemetry" in line]
    assert len(said) == 1 and "could not export" in said[0], run.stderr
    assert "Traceback" not in run.stderr and "Failed to export" not in run.stderr


def test_a_batch_of_three_tasks_is_one_trace_and_each_task_process_gets_its_task_span(tmp_path: Path) -> None:
    from tests.test_batch_e2e import batch, write_tasks

    write_tasks(tmp_path / "tasks.jsonl", [{"id": f"t{n}", "prompt": f"task {n}"} for n in range(3)])
    with Receiver() as receiver:
        env = {"SPROUT_AGENT_TELEMETRY": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        run = batch(tmp_path, ["tasks.jsonl", "--out", "out", "-j", "3"], env)
    assert run.returncode == 0, run.stderr
    (root,) = [s for s in receiver.spans if s.name == "batch"]
    tasks = {s.name: s for s in receiver.spans if s.name.startswith("batch task ")}
    assert sorted(tasks) == ["batch task t0", "batch task t1", "batch task t2"]
    assert {s.trace_id for s in tasks.values()} == {root.trace_id} and {s.parent_id for s in tasks.values()} == {
        root.span_id
    }
    assert tasks["batch task t1"].attributes["sprout.task.status"] == "ok"
    for n in range(3):
        traceparent = (tmp_path / "out" / "work" / f"t{n}" / "traceparent.txt").read_text()
        assert traceparent.startswith(f"00-{root.trace_id}-{tasks[f'batch task t{n}'].span_id}-")


def test_the_model_lookup_at_start_up_sends_no_span_of_the_anthropic_sdks_own(tmp_path: Path) -> None:
    # docs/telemetry.md: the anthropic SDK's own spans and trace propagation are off; the model's facts are
    # looked up by a client of their own at start-up, which had them on (an `anthropic.models.retrieve` span,
    # and a traceparent header to the API).
    with Receiver() as receiver, FakeAnthropic([reply("done")]) as fake:
        env = {"SPROUT_AGENT_TELEMETRY": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, env=env)
        assert run.code == 0, run.stderr
        assert fake.model_lookups  # the lookup happened
    names = [s.name for s in receiver.spans]
    assert "session" in names and "chat claude-sonnet-5-5" in names
    assert [name for name in names if name.startswith("anthropic.")] == []


@pytest.mark.parametrize(
    ("content", "status"), [("1", "bad credentials: [redacted] (token [redacted])"), ("", "")], ids=["content", "off"]
)
def test_a_servers_error_reaches_the_collector_only_with_contents_and_never_a_credential(
    tmp_path: Path, content: str, status: str
) -> None:
    # The mcp SDK's own client span takes a JSON-RPC error's message (the tool's answer) as its status, outside
    # our spans' filter and switch; whatever made a span, what is exported goes through them (docs/telemetry.md).
    shaped, plain = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2, "plain-secret-4242-abcd"
    with Receiver() as receiver, FakeAnthropic([reply(tool_use("gh__refuse", {})), reply("done")]) as fake:
        otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        refusal = {"REFUSAL": f"bad credentials: {shaped} (token {plain})"}
        config = write_config(tmp_path, {"gh": {"command": sys.executable, "args": [SERVER], "env": otel | refusal}})
        env = otel | {"SPROUT_AGENT_TELEMETRY": "1", "SPROUT_AGENT_TELEMETRY_CONTENT": content, "GITHUB_TOKEN": plain}
        run = run_agent(tmp_path, ["--config", str(config), "-p", "go"], fake=fake, env=env)
        assert run.code == 0, run.stderr
    ours = [s for s in receiver.spans if s.service == "sprout-agent"]
    (sent,) = [s for s in ours if s.name == "MCP send tools/call refuse"]
    assert sent.status == status
    exported = repr([(s.name, s.status, s.attributes) for s in ours])
    assert shaped not in exported and plain not in exported


def test_a_batch_with_an_otel_setting_the_sdk_refuses_runs_untraced_after_one_notice(tmp_path: Path) -> None:
    # As a session does (docs/telemetry.md): the batch used to stop at once, "internal error", no task run.
    from tests.test_batch_e2e import batch, write_tasks

    write_tasks(tmp_path / "tasks.jsonl", [{"id": "t0", "prompt": "task 0"}])
    env = {"SPROUT_AGENT_TELEMETRY": "1", "OTEL_BSP_SCHEDULE_DELAY": "-5"}
    run = batch(tmp_path, ["tasks.jsonl", "--out", "out"], env)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / "work" / "t0" / "answer.txt").exists()
    said = [line for line in run.stderr.splitlines() if "telemetry" in line]
    assert len(said) == 1 and "schedule_delay_millis" in said[0] and "internal error" not in run.stderr


def test_a_header_credential_the_exporter_cannot_parse_is_not_printed(tmp_path: Path) -> None:
    # `name: value`, as HTTP writes a header, is no OTEL_EXPORTER_OTLP_HEADERS entry: the SDK logs the entry,
    # credential and all, which Python's last-resort handler printed on the batch's stderr (a CI log).
    from tests.test_batch_e2e import batch, write_tasks

    write_tasks(tmp_path / "tasks.jsonl", [{"id": "t0", "prompt": "task 0"}])
    with Receiver() as receiver:
        env = {
            "SPROUT_AGENT_TELEMETRY": "1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "authorization: Bearer hny-supersecret-123",
        }
        run = batch(tmp_path, ["tasks.jsonl", "--out", "out"], env)
    assert run.returncode == 0, run.stderr
    assert "hny-supersecret-123" not in run.stderr and "Header format invalid" not in run.stderr


def test_a_command_the_agent_runs_gets_the_trace_but_not_the_collectors_credential(tmp_path: Path) -> None:
    # OTEL_EXPORTER_OTLP_HEADERS is where a collector's key goes (docs/telemetry.md); its name has no secret part,
    # so `dev__bash` handed it to every command the model chose, and its output to the model.
    command = "echo H=$OTEL_EXPORTER_OTLP_HEADERS TP=$TRACEPARENT"
    script = [reply(tool_use("dev__bash", {"command": command})), reply("ok")]
    with Receiver() as receiver, FakeAnthropic(script) as fake:
        env = {
            "SPROUT_AGENT_TELEMETRY": "1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-honeycomb-team=hc-collector-key-0042",
            "SPROUT_AGENT_BUILTIN_SERVERS": "dev",
            "SPROUT_AGENT_SANDBOX": "off",
        }
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, env=env)
        assert run.code == 0, run.stderr
    seen = str(fake.requests[1].body["messages"][-1]["content"][0])
    assert "TP=00-" in seen and "hc-collector-key-0042" not in seen


def test_a_batchs_close_waits_no_longer_than_its_bound_for_a_collector_that_never_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The SDK's flush exports the queued spans batch after batch, each waiting its whole timeout: a thousand
    # tasks' spans and a collector that took the connection but never answered kept the batch's exit 9 s.
    from sprout_agent.telemetry.batch import BatchTelemetry

    with socket.socket() as silent:  # takes connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        tracing = BatchTelemetry(dict(os.environ), "tasks.jsonl", lambda text: None)
        for n in range(1500):  # three exports' worth (512 spans each)
            tracing.started(f"t{n}")
            tracing.finished(f"t{n}", {"status": "ok"})
        started = time.monotonic()
        said = tracing.close()
        took = time.monotonic() - started
    assert took < bounded(6), took  # the bound is 3.5 s (docs/telemetry.md); each export alone takes 3
    assert said is not None and "could not export" in said


def test_a_notice_that_quotes_a_credential_goes_out_as_a_log_record_redacted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A notice may quote a server (a re-listing that failed gives the server's error message); the spans' filter
    # did not cover the log records.
    from sprout_agent.core.events import Notice
    from sprout_agent.telemetry.signals import Telemetry

    shaped, plain = "ghp_" + "Z9y8X7w6V5u4" * 3, "plain-secret-4242-abcd"
    off = {f"OTEL_{kind}_EXPORTER": "none" for kind in ("TRACES", "METRICS")}
    environ = off | {"SPROUT_AGENT_TELEMETRY": "1", "OTEL_LOGS_EXPORTER": "console", "GITHUB_TOKEN": plain}
    telemetry = Telemetry(environ, "session-1", lambda text: None)
    telemetry.observe(Notice(f"MCP server 'gh': re-listing its tools failed: bad token {shaped} ({plain})", "warning"))
    telemetry.close(timeout_s=bounded(5))
    printed = capsys.readouterr().err
    assert "re-listing its tools failed: bad token [redacted] ([redacted])" in printed
    assert shaped not in printed and plain not in printed


def test_a_session_whose_telemetry_the_sdk_refuses_gives_its_commands_no_trace(tmp_path: Path) -> None:
    # "telemetry is off", but the refused setting came after the session's provider was made the process's: the
    # mcp SDK went on tracing into it, and each command got a TRACEPARENT of a trace no one would ever see.
    command = "echo TP=${TRACEPARENT:-none}"
    with FakeAnthropic([reply(tool_use("dev__bash", {"command": command})), reply("ok")]) as fake:
        env = {
            "SPROUT_AGENT_TELEMETRY": "1",
            "OTEL_METRIC_EXPORT_INTERVAL": "0",
            "SPROUT_AGENT_BUILTIN_SERVERS": "dev",
            "SPROUT_AGENT_SANDBOX": "off",
        }
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, env=env)
        assert run.code == 0, run.stderr
    assert "telemetry is off" in run.stderr
    assert "TP=none" in str(fake.requests[1].body["messages"][-1]["content"][0])


def test_an_api_key_from_the_projects_env_file_is_redacted_like_one_from_the_environment(tmp_path: Path) -> None:
    # The key may come from `.env` (docs/configuration.md); the filter knew only the real environment's values,
    # so a key of no well-known shape (a gateway's) went out in a recorded tool result.
    key = "gw-plain-key-0123456789abcdef"
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={key}\n")
    read = tool_use("dev__read", {"file_path": str(tmp_path / ".env")})
    with Receiver() as receiver, FakeAnthropic([reply(read), reply("ok")]) as fake:
        env = agent_env(tmp_path, fake, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"})
        del env["ANTHROPIC_API_KEY"]
        env |= {"SPROUT_AGENT_TELEMETRY": "1", "SPROUT_AGENT_TELEMETRY_CONTENT": "1"}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        run = subprocess.run(
            agent_command(["-p", "go"]), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=bounded(60)
        )
        assert run.returncode == 0, run.stderr
        assert key in str(fake.requests[0].headers)  # the key in use is the `.env`'s
    (tool,) = [s for s in receiver.spans if s.name == "execute_tool dev__read"]
    assert "[redacted]" in tool.attributes["sprout.tool.result"]
    assert key not in repr([(s.status, s.attributes) for s in receiver.spans])


def test_a_credential_the_config_hands_a_server_is_redacted_in_recorded_contents(tmp_path: Path) -> None:
    # Written in `.mcp.json` (a server's `env`, a remote server's `Authorization` header) and of no well-known
    # shape, such a credential was unknown to the filter, which read only the environments' variables.
    token, bearer = "svc-plain-0123456789abcdef", "hdr-plain-0123456789abcdef"
    (tmp_path / "notes.txt").write_text(f"the header's token: {bearer}\n")
    servers = {
        "svc": fake_server(tools="env") | {"env": {"SVC_TOKEN": token}},
        "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": f"Bearer {bearer}"}},
    }
    config = write_config(tmp_path, servers)
    calls = [
        tool_use("svc__env", {"name": "SVC_TOKEN"}, id="t1"),
        tool_use("dev__read", {"file_path": "notes.txt"}, id="t2"),
    ]
    with Receiver() as receiver, FakeAnthropic([reply(*calls), reply("ok")]) as fake:
        env = {
            "SPROUT_AGENT_BUILTIN_SERVERS": "dev",
            "SPROUT_AGENT_TELEMETRY": "1",
            "SPROUT_AGENT_TELEMETRY_CONTENT": "1",
        }
        env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        run = run_agent(tmp_path, ["--config", str(config), "-p", "go"], fake=fake, env=env)
        assert run.code == 0, run.stderr
        results = str(fake.requests[1].body["messages"][-1]["content"])
        assert token in results and bearer in results  # the model saw them: only the collector must not
    tools = [s for s in receiver.spans if s.name.startswith("execute_tool")]
    assert len(tools) == 2 and all("[redacted]" in s.attributes["sprout.tool.result"] for s in tools)
    everything = repr([(s.name, s.status, s.attributes) for s in receiver.spans])
    assert token not in everything and bearer not in everything


def test_telemetry_switched_on_without_its_extra_says_the_install_command_in_one_line_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    # The SDK is the `telemetry` extra (pyproject), not installed by default. This Python cannot import it, as one
    # installed without the extra: `opentelemetry.sdk` fails as Python fails a missing module (the API, which the
    # mcp SDK brings, still imports).
    missing = tmp_path / "without-extra" / "opentelemetry" / "sdk"
    missing.mkdir(parents=True)
    (missing / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'opentelemetry.sdk'\", name='opentelemetry.sdk')\n"
    )
    with FakeAnthropic([reply("done")]) as fake:
        env = {
            "SPROUT_AGENT_TELEMETRY": "1",
            "PYTHONPATH": f"{missing.parent.parent}{os.pathsep}{ROOT}",
            "SPROUT_AGENT_WARM": "0",  # a warm interpreter has its own sys.path: this process's is the one tested
        }
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, env=env)
    assert run.code == 0 and run.stdout.strip() == "done", run.stderr
    said = [line for line in run.stderr.splitlines() if "telemetry" in line]
    assert said == [
        "telemetry is off: the OpenTelemetry SDK is not installed (opentelemetry.sdk): "
        "pip install 'sprout-agent[telemetry]'"
    ], run.stderr
    assert "Traceback" not in run.stderr
