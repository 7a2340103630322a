"""`sprout-agent doctor`'s provider check: the provider, model and credentials a run here would use, decided as a
run decides them, then one 1-token request (billed; `--offline` skips it) and a line per stage that held or failed,
the failure naming the variable to fix, with the exit code a run would have (docs/providers.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TextIO

import anyio

from sprout_agent.config.credential_commands import CredentialCommands
from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.config.provider import provider_record
from sprout_agent.core.errors import EXIT_OK, SproutError
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.ledger import Ledger
from sprout_agent.model.probe import STAGES, Probe, probe
from sprout_agent.session.model_building import make_model
from sprout_agent.session.prepared import Prepared, prepare
from sprout_agent.trust.untrusted import printable

PROBE_TIMEOUT_S = 60.0  # one 1-token request: a provider that has not answered by then is not reachable enough
_STAGE_LINES = {
    "reachable": "reachable",
    "credentials": "credentials accepted",
    "model": "model served",
    "streaming": "streaming",
}
_MARKS = {True: "ok  ", False: "FAIL", None: "--  "}


@dataclass
class Report:
    """What doctor says about the provider: the lines for a person, the record for --json, the exit code."""

    lines: list[str] = field(default_factory=list[str])
    record: dict[str, object] = field(default_factory=dict[str, object])
    exit_code: int = EXIT_OK


def check_provider(options: Options, environ: Mapping[str, str], *, offline: bool) -> Report:
    """Decides the run's provider, model and credentials (a configuration error: its line and exit code), then,
    unless `offline`, sends the one request."""
    report = Report()
    try:
        prepared = prepare(options, Locations.for_user(), environ)
    except SproutError as error:
        report.lines.append(f"FAIL configuration: {printable(str(error))}")
        report.record = {"configuration": str(error)}
        report.exit_code = error.exit_code
        return report
    provider = prepared.settings.provider
    source = credential_source(prepared.credentials, prepared)
    report.lines += [f"provider: {provider.describe()}", f"model: {prepared.model}", f"credentials: {source}"]
    report.record = {"provider": provider_record(provider), "model": prepared.model, "credentials": source}
    if offline:
        report.lines.append("no request sent (--offline); without it, doctor sends one request of 1 output token")
        return report
    _send(prepared, report)
    return report


def _send(prepared: Prepared, report: Report) -> None:
    notices: list[str] = []

    def emit(event: Event) -> None:
        if isinstance(event, Notice):
            notices.append(event.text)

    async def run() -> Probe:
        model, _ = await anyio.to_thread.run_sync(make_model, prepared, emit, Ledger(prepared.model), None, 0)
        try:
            with anyio.fail_after(PROBE_TIMEOUT_S):
                return await probe(model)
        finally:
            await model.aclose()

    try:
        found = anyio.run(run)
    except SproutError as error:  # the key helper or the AWS export failed before any request
        report.lines.append(f"FAIL credentials: {printable(str(error))}")
        report.record["checks"] = {"credentials": False, "error": str(error)}
        report.exit_code = error.exit_code
        return
    checks: dict[str, object] = {stage: found.held(stage) for stage in STAGES}
    for stage in STAGES:
        held = found.held(stage)
        said = f": {printable(found.said)}" if held is False else ""
        report.lines.append(f"{_MARKS[held]} {_STAGE_LINES[stage]}{said}")
    if found.failed == "request":
        report.lines.append(f"FAIL request: {printable(found.said)}")
    report.lines += [f"note: {printable(text)}" for text in notices]
    report.lines.append("one request of 1 output token was sent (billed by the provider); --offline skips it")
    report.record["checks"] = checks | ({"error": found.said} if found.failed else {})
    report.exit_code = found.exit_code


def credential_source(commands: CredentialCommands, prepared: Prepared) -> str:
    """Where this run's credentials come from, by name only (never a value)."""
    for command in (commands.key_helper, commands.aws_export):
        if command is not None:
            return command.named
    env, kind = prepared.settings_env, prepared.settings.provider.kind
    if prepared.settings.provider.skip_auth:
        return "none (a gateway in front authenticates)"
    if kind == "bedrock":
        if env.get("AWS_BEARER_TOKEN_BEDROCK"):
            return "AWS_BEARER_TOKEN_BEDROCK"
        profile = env.get("AWS_PROFILE")
        return f"the AWS credential chain (AWS_PROFILE={profile})" if profile else "the AWS credential chain"
    if kind == "vertex":
        return "Google application default credentials"
    if kind == "foundry":
        named = [name for name in ("ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_FOUNDRY_AUTH_TOKEN") if env.get(name)]
        return named[0] if named else "Microsoft Entra ID (azure-identity's DefaultAzureCredential)"
    named = [name for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if env.get(name)]  # as api_key() picks
    if len(named) == 2:  # both sent, as Claude Code sends them (model/providers.first_party_auth)
        return "ANTHROPIC_AUTH_TOKEN (Authorization: Bearer) and ANTHROPIC_API_KEY (X-Api-Key)"
    return named[0] if named else "none (a server on this machine's loopback)"


def write(report: Report, out: TextIO) -> None:
    out.write("".join(f"{line}\n" for line in report.lines))
