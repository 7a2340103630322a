"""Consent for project-scoped MCP servers: a cloned repository's `.mcp.json` starts nothing unapproved.

A project server is one found by the lookup (the nearest `.mcp.json` in the working directory or above it);
files the user names with `--config` or `--mcp-config`, the user config and the built-in servers are the user's
own and need no consent.
Answers live in the user data directory (`project-servers.json`), keyed by the config file's resolved path and
the server's name, with a fingerprint of the definition as it would run (command, args, env and cwd after
expanding variables; for a remote server its transport, url and headers, since they decide where your
credentials go), so a `.env` that changes an expanded value changes the fingerprint, credential-looking or not;
only the credentials of your real environment are masked): a changed definition is a new one and asks again.
A yes and a no are both remembered, as Claude Code remembers both.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import os
import shlex
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from sprout_agent.config.files import LoadedConfig, ServerConfig
from sprout_agent.config.server_config import configured_credentials
from sprout_agent.core.errors import ConfigError
from sprout_agent.trust.env_flags import env_flag
from sprout_agent.trust.secrets import is_secret, redactor, secret_name
from sprout_agent.trust.untrusted import printable

APPROVALS_FILE = "project-servers.json"
SETTINGS_ENTRY = "(settings)"  # a settings file's answer; no server name has parentheses (server_names.py)
TRUST_PROJECT_ENV = "SPROUT_AGENT_TRUST_PROJECT"  # read from the real environment only, never from .env


class Verdict(enum.StrEnum):
    APPROVED = "approved"
    DECLINED = "declined"  # the user said no to this very definition
    CHANGED = "changed"  # approved once, but the definition differs now
    UNKNOWN = "not approved"  # never asked


@dataclass(frozen=True, slots=True)
class Secrets:
    """Credential values a definition may carry (value -> the variable it came from), by whose they are.

    Yours, from the real environment, are masked as `${NAME}` in what is shown, stored and hashed: rotating a key
    asks nothing, and no key of yours reaches the approvals file, not even hashed. The project's, from its own
    `.env`, are the repository's values like any other in its definition: hashed as they are (a changed value
    asks again), but never shown nor stored in clear."""

    yours: Mapping[str, str] = field(default_factory=dict[str, str])
    project: Mapping[str, str] = field(default_factory=dict[str, str])

    @property
    def hidden(self) -> dict[str, str]:
        """Every value masked where a person reads it."""
        return {**self.project, **self.yours}


def _credentials(env: Mapping[str, str]) -> dict[str, str]:
    return {value: name for name, value in env.items() if len(value) >= 6 and is_secret(name, value)}


def secrets_in(env: Mapping[str, str], environ: Mapping[str, str]) -> Secrets:
    """The credential values of `env` (what the run reads: the real environment over .env), by origin:
    `environ` is the real environment, the rest of `env` came from the project's `.env`."""
    return Secrets(_credentials(environ), _credentials({k: v for k, v in env.items() if k not in environ}))


def mask(text: str, secrets: Mapping[str, str]) -> str:
    """`text` with every value of `secrets` (value -> its variable's name) replaced by `${NAME}`."""
    for value in sorted(secrets, key=len, reverse=True):
        text = text.replace(value, "${" + secrets[value] + "}")
    return text


def for_reading(secrets: Secrets, env: Mapping[str, str], servers: Iterable[ServerConfig]) -> Callable[[str], str]:
    """What a person or a script reads of the config (`mcp list`, `mcp doctor`, text and JSON): a credential of the
    environments as `${NAME}` (what the file says, and whose it is), then any other credential the one filter knows
    (trust/secrets.py `redactor`: a secret-named variable's value, a value the config hands a server as a
    credential, a well-known key's shape, a URL's password) as `[redacted]`."""
    redact, hidden = redactor({**env, **configured_credentials(servers)}), secrets.hidden
    return lambda text: redact(mask(text, hidden))


def masked(server: ServerConfig, secrets: Mapping[str, str]) -> ServerConfig:
    """The definition with every value of `secrets` replaced by `${NAME}`."""
    if not secrets:
        return server
    return replace(
        server,
        command=mask(server.command, secrets),
        args=tuple(mask(arg, secrets) for arg in server.args),
        env={name: mask(value, secrets) for name, value in server.env.items()},
        cwd=None if server.cwd is None else mask(server.cwd, secrets),
        url=None if server.url is None else mask(server.url, secrets),
        headers={name: mask(value, secrets) for name, value in server.headers.items()},
    )


def fingerprint(server: ServerConfig, secrets: Secrets) -> str:
    """What identifies a definition: everything that decides what runs, as it would run (your credentials
    masked; a value from the project's `.env` is the repository's and counts as it is)."""
    shown = masked(server, secrets.yours)
    if server.remote:  # where the requests go and what they carry decides what a remote server gets
        remote = {"transport": shown.transport, "url": shown.url, "headers": shown.headers}
        return hashlib.sha256(json.dumps(remote, sort_keys=True, ensure_ascii=True).encode()).hexdigest()
    definition: dict[str, object] = {
        "command": shown.command,
        "args": list(shown.args),
        "env": shown.env,
        "cwd": shown.cwd,
    }
    if server.sandbox is not None:  # added only when set: approvals given before the key existed stay valid
        definition["sandbox"] = server.sandbox
    canonical = json.dumps(definition, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _file_key(server: ServerConfig) -> str:
    # The path as found, not resolved: a repository whose .mcp.json links to an approved project's file must
    # not borrow that approval (its relative commands would run its own code).
    return str(server.source.absolute()) if server.source is not None else ""


@dataclass(frozen=True, slots=True)
class Approvals:
    """The remembered answers: {config file: {server name: {"fingerprint": …, "approved": bool}}}."""

    path: Path | None  # None: nothing is remembered (Locations.nowhere())
    records: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict[str, dict[str, dict[str, Any]]])

    @classmethod
    def load(cls, data_dir: Path | None) -> Approvals:
        """The answers on disk; a missing or unreadable file remembers nothing (everything asks again)."""
        if data_dir is None:
            return cls(None)
        path = data_dir / APPROVALS_FILE
        try:
            raw: object = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return cls(path)
        records: dict[str, dict[str, dict[str, Any]]] = {}
        if isinstance(raw, dict):
            for key, servers in cast(dict[str, object], raw).items():
                if isinstance(servers, dict):
                    records[key] = {
                        name: cast(dict[str, Any], entry)
                        for name, entry in cast(dict[str, object], servers).items()
                        if isinstance(entry, dict)
                    }
        return cls(path, records)

    def verdict(self, server: ServerConfig, secrets: Secrets) -> Verdict:
        entry = self.records.get(_file_key(server), {}).get(server.name)
        if entry is None:
            return Verdict.UNKNOWN
        if entry.get("fingerprint") != fingerprint(server, secrets):
            return Verdict.CHANGED
        return Verdict.APPROVED if entry.get("approved") is True else Verdict.DECLINED

    def answered(self, servers: Iterable[ServerConfig], approved: bool, secrets: Secrets) -> Approvals:
        """These servers' answer recorded, and written to disk (0600, atomically)."""
        records = {key: dict(value) for key, value in self.records.items()}
        for server in servers:
            shown = masked(server, secrets.hidden)
            records.setdefault(_file_key(server), {})[server.name] = {
                "fingerprint": fingerprint(server, secrets),
                "approved": approved,
                "command": _command_line(shown),  # for a person reading the file
            }
        return self._saved(records)

    def settings_verdict(self, path: Path, fingerprint: str) -> Verdict:
        """The answer about a repository settings file's widening part (its allow rules, hooks, env…), kept beside
        its servers' under the file's own path, as a server's under its config file's (`SETTINGS_ENTRY`)."""
        entry = self.records.get(str(path.absolute()), {}).get(SETTINGS_ENTRY)
        if entry is None:
            return Verdict.UNKNOWN
        if entry.get("fingerprint") != fingerprint:
            return Verdict.CHANGED
        return Verdict.APPROVED if entry.get("approved") is True else Verdict.DECLINED

    def answered_settings(self, answers: Iterable[tuple[Path, str, bool]]) -> Approvals:
        """(settings file, fingerprint of its widening part, approved) recorded, and written to disk."""
        records = {key: dict(value) for key, value in self.records.items()}
        for path, print_, approved in answers:
            records.setdefault(str(path.absolute()), {})[SETTINGS_ENTRY] = {"fingerprint": print_, "approved": approved}
        return self._saved(records)

    def forgotten(self, servers: Iterable[ServerConfig]) -> Approvals:
        records = {key: dict(value) for key, value in self.records.items()}
        for server in servers:
            records.get(_file_key(server), {}).pop(server.name, None)
        return self._saved({key: value for key, value in records.items() if value})

    def _saved(self, records: dict[str, dict[str, dict[str, Any]]]) -> Approvals:
        if self.path is None:
            return replace(self, records=records)
        temporary: str | None = None
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".approvals-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:  # mkstemp creates it 0600
                json.dump(records, out, indent=2, sort_keys=True)
            os.replace(temporary, self.path)
        except OSError as error:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            raise ConfigError(f"cannot save MCP server approvals to {self.path}: {error.strerror}") from None
        return replace(self, records=records)


def trusted_by_environment(environ: Mapping[str, str]) -> bool:
    return env_flag(environ, TRUST_PROJECT_ENV)


@dataclass(frozen=True, slots=True)
class Gated:
    """A config split by consent: what may start, and the project servers waiting for an answer."""

    loaded: LoadedConfig
    pending: tuple[ServerConfig, ...]
    verdicts: dict[str, Verdict]  # for every pending server


def gate(
    loaded: LoadedConfig,
    approvals: Approvals,
    secrets: Secrets,
    *,
    trusted: bool,
    enabled: frozenset[str] = frozenset(),
) -> Gated:
    """Holds back every project server not approved as it stands (unless the run trusts the project); `enabled`:
    project servers approved by name (a settings file's enabledMcpjsonServers, itself approved)."""
    if trusted:
        return Gated(loaded, (), {})
    kept: list[ServerConfig] = []
    pending: list[ServerConfig] = []
    verdicts: dict[str, Verdict] = {}
    for server in loaded.servers:
        named = not server.project or server.name in enabled
        verdict = Verdict.APPROVED if named else approvals.verdict(server, secrets)
        if verdict is Verdict.APPROVED:
            kept.append(server)
        else:
            pending.append(server)
            verdicts[server.name] = verdict
    return Gated(replace(loaded, servers=tuple(kept)), tuple(pending), verdicts)


def held_back_notice(server: ServerConfig, verdict: Verdict) -> str:
    """The one line a run without anyone to ask shows for a project server it did not start."""
    why = {
        Verdict.DECLINED: "you declined it",
        Verdict.CHANGED: "its definition changed since you approved it",
    }.get(verdict, "not approved yet")
    return (
        f"project MCP server '{server.name}' ({server.source.name if server.source else '?'}) not started: {why}; "
        f"approve it with `sprout-agent mcp approve {server.name}` in this folder, or run with --trust-project"
    )


SHOWN_LIMIT = 400  # characters of one shown value: more is said, not shown


def describe(server: ServerConfig, secrets: Secrets) -> list[str]:
    """The lines a person needs to decide: the full command line, cwd, and the env it sets (credentials
    masked as `${NAME}`, and named, since the server would receive them; a literal one anywhere else, in `args`
    or `cwd`, as `[redacted]` by the one filter, as `mcp list` shows it)."""
    shown = _shown(server, secrets)
    command = printable(_command_line(shown), SHOWN_LIMIT)
    lines = [f"  {printable(server.name)}: {command}"]
    for name, value in sorted(shown.headers.items()):
        lines.append(f"      header: {printable(name)}: {_value(name, value, is_secret(name, value))}")
    if shown.cwd is not None:
        lines.append(f"      cwd: {printable(shown.cwd, SHOWN_LIMIT)}")
    for name, value in sorted(shown.env.items()):
        # By its name only: a value that merely looks like a key (a URL with a password) may be what decides what
        # runs (NODE_OPTIONS), and is shown.
        lines.append(f"      env: {printable(name)}={_value(name, value, secret_name(name))}")
    if server.sandbox is not None:
        lines.append(f'      runs in a {server.sandbox} OS sandbox (its "sandbox" key; not with --sandbox off)')
    for whose, found in (("your credentials", secrets.yours), ("credentials from the project's .env", secrets.project)):
        if passed := sorted({name for value, name in found.items() if _uses(server, value)}):
            lines.append(f"      it would receive {whose}: {', '.join(passed)}")
    return lines


def _value(name: str, value: str, secret: bool) -> str:
    """A literal credential in the definition is not shown either: the question is where it goes, not what it
    is. One masked as `${NAME}` already is shown so."""
    if secret and "${" not in value:
        return f"(hidden, {len(value)} characters)"
    return printable(value, SHOWN_LIMIT)


def _uses(server: ServerConfig, value: str) -> bool:
    texts = (server.command, *server.args, *server.env.values(), server.cwd or "", server.url or "")
    texts += tuple(server.headers.values())
    return any(value in text for text in texts)


def short_command(server: ServerConfig, secrets: Secrets) -> str:
    """The start of the command line, for the question line itself (the whole of it is listed above)."""
    return printable(_command_line(_shown(server, secrets)), 80)


def _shown(server: ServerConfig, secrets: Secrets) -> ServerConfig:
    """The definition as a person reads it: credentials of the environments as `${NAME}`, then what the filter
    knows (a value the definition hands over as a credential, a well-known key's shape, a URL's password) in the
    command line and cwd as `[redacted]`; `env` and headers are shown by name (`_value`)."""
    show = for_reading(secrets, {}, [server])  # as `mcp list` shows it: one rule for what a person reads
    cwd = None if server.cwd is None else show(server.cwd)
    url = None if server.url is None else show(server.url)
    command, args = show(server.command), tuple(map(show, server.args))
    return replace(masked(server, secrets.hidden), command=command, args=args, cwd=cwd, url=url)


def _command_line(shown: ServerConfig) -> str:
    """What starts it: the command line, or for a remote server its transport and URL."""
    if shown.remote:
        return f"{shown.transport} {shown.url}"
    return shlex.join([shown.command, *shown.args])
