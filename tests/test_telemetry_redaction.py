"""Everything telemetry exports passes the one secret filter (trust/secrets.py `redactor`, otel.py `redacted`): the
resource (OTEL_RESOURCE_ATTRIBUTES and the detectors'), the attributes of spans (ours and the SDKs'), of events, of
metric data points, and log records. In-process sessions exporting to a real OTLP/HTTP receiver; every assertion is on
the bytes it received."""

from __future__ import annotations

import os

import pytest
from opentelemetry import trace

from sprout_agent.core.events import HookObjected, Notice, ToolFinished
from sprout_agent.telemetry.signals import Telemetry
from tests.bounds import bounded
from tests.otlp_receiver import Receiver

SHAPED = "ghp_" + "R3s0urc3K3y9" * 3  # a well-known key's shape, under an innocent name
PLAIN = "deploy-plain-secret-7788"  # no shape: a secret only by the name it is under
KNOWN = "gateway-credential-0991-abc"  # no shape: the value of a credential variable of this process


def exported_by_a_session(receiver: Receiver, monkeypatch: pytest.MonkeyPatch, **extra: str) -> list[str]:
    """Runs a session's telemetry that records a span, an event, a tool's and a hook's metrics and a notice, all
    quoting the three secrets; returns the notes it made."""
    environ = {
        "SPROUT_AGENT_TELEMETRY": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "GATEWAY_API_KEY": KNOWN,
        **extra,
    }
    for name, value in environ.items():  # the SDK's exporters and resource detector read the real environment
        monkeypatch.setenv(name, value)
    notes: list[str] = []
    telemetry = Telemetry(dict(os.environ), "session-redaction", notes.append)
    said = f"{SHAPED} {KNOWN}"
    with telemetry.tracer.span("execute_tool gh__call", {"deployment.token": PLAIN, "sprout.tool.name": said}):
        telemetry.tracer.event("note", {"api_key": PLAIN, "text": said})
    theirs = trace.get_tracer("mcp-sdk")  # the process's provider: the SDKs' own spans go to the open session
    with theirs.start_as_current_span("their span", attributes={"mcp.session.token": PLAIN, "detail": said}):
        pass
    telemetry.observe(ToolFinished("t1", f"gh__{SHAPED}", False, 0.1, ""))
    telemetry.observe(HookObjected("_Stop", f"server-{KNOWN}", "no"))
    telemetry.observe(Notice(f"a notice quoting {said}", "warning"))
    telemetry.close(timeout_s=bounded(5))
    return notes


def assert_nothing_secret_received(receiver: Receiver) -> None:
    assert receiver.bodies, "nothing was exported"
    for body in receiver.bodies:
        for secret in (SHAPED, PLAIN, KNOWN):
            assert secret.encode() not in body


def test_a_secret_in_otel_resource_attributes_never_reaches_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    # OTEL_RESOURCE_ATTRIBUTES went out as the resource of every span, metric and log record, unfiltered.
    attributes = (
        f"deployment.environment=staging,deployment.token={PLAIN},build.note={SHAPED},gateway={KNOWN},{SHAPED}=1"
    )
    with Receiver() as receiver:
        notes = exported_by_a_session(receiver, monkeypatch, OTEL_RESOURCE_ATTRIBUTES=attributes)
    assert notes == []
    assert receiver.spans and receiver.metrics and receiver.logs  # all three signals carry the resource
    assert len(receiver.resources) >= 3
    for resource in receiver.resources:
        assert resource["deployment.environment"] == "staging"  # what is no secret goes out as it was
        assert resource["deployment.token"] == "[redacted]"  # a secret name: the whole value
        assert resource["build.note"] == "[redacted]" and resource["gateway"] == "[redacted]"
        assert resource["[redacted]"] == "1"  # a key shaped like a key
    assert_nothing_secret_received(receiver)


def test_a_secret_service_name_is_redacted_and_an_ordinary_one_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    with Receiver() as receiver:
        exported_by_a_session(receiver, monkeypatch, OTEL_SERVICE_NAME=SHAPED)
    assert {resource["service.name"] for resource in receiver.resources} == {"[redacted]"}
    assert_nothing_secret_received(receiver)
    with Receiver() as receiver:
        exported_by_a_session(receiver, monkeypatch, OTEL_SERVICE_NAME="billing-agent")
    assert {resource["service.name"] for resource in receiver.resources} == {"billing-agent"}


def test_every_exported_attribute_a_secret_rule_knows_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    # The spans' values went through the filter, but not a value under a credential's name, nor a metric's
    # attributes (a tool's name, a server's: a server chooses them).
    with Receiver() as receiver:
        exported_by_a_session(receiver, monkeypatch)
    spans = {span.name: span for span in receiver.spans}
    ours = spans["execute_tool gh__call"].attributes
    assert ours["deployment.token"] == "[redacted]" and ours["sprout.tool.name"] == "[redacted] [redacted]"
    assert spans["their span"].attributes == {"mcp.session.token": "[redacted]", "detail": "[redacted] [redacted]"}
    assert "sprout.tool.calls" in receiver.metrics and "sprout.hook.decisions" in receiver.metrics
    assert receiver.logs == ["hook _Stop from server-[redacted] objected", "a notice quoting [redacted] [redacted]"]
    assert_nothing_secret_received(receiver)
