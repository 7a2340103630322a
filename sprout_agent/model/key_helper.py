"""The one runner of the commands that fetch or refresh credentials (config/credential_commands.py): `apiKeyHelper`
or SPROUT_AGENT_API_KEY_HELPER (a key, run again once CLAUDE_CODE_API_KEY_HELPER_TTL_MS has passed and after a
401/403), `awsCredentialExport` (AWS keys as JSON), `awsAuthRefresh` and `gcpAuthRefresh` (a login, shown to you).
What a command prints stays in this process's memory: never in an environment, a log or a transcript."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sprout_agent.config.credential_commands import Command
from sprout_agent.core.errors import ApiError
from sprout_agent.trust.secrets import without_secrets

HELPER_TIMEOUT_S = 30.0  # a helper that asks a vault may take a while; never forever
REFRESH_TIMEOUT_S = 300.0  # awsAuthRefresh, gcpAuthRefresh: a browser login waits for you
_KEY_CHARS = frozenset(chr(c) for c in range(0x21, 0x7F))  # a key goes in a header: printable ASCII, no spaces


def run(command: Command, env: Mapping[str, str], *, shown: bool = False, timeout: float | None = None) -> str:
    """Runs `command` by `/bin/sh -c` (as Claude Code does) with the environment the agent's tools get (secrets
    filtered out), stdin closed, its process group killed when it overruns. `shown`: its output goes to our stderr
    (a login's code to type in a browser) and "" is returned; else it is returned, and an error never quotes it."""
    timeout = timeout or (REFRESH_TIMEOUT_S if shown else HELPER_TIMEOUT_S)
    out: int = 2 if shown else subprocess.PIPE  # fd 2, never stdout: -p's stdout is the answer or JSON lines
    try:
        child = subprocess.Popen(
            ["/bin/sh", "-c", command.command],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=2 if shown else subprocess.DEVNULL,
            env=without_secrets(env),
            start_new_session=True,
        )
    except OSError as error:
        raise ApiError(f"{command.named} could not be run: {error.strerror}") from None
    try:
        printed, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        raise ApiError(f"{command.named} did not finish within {timeout:g} s") from None
    if child.returncode != 0:  # its output is not shown: it may hold the key, or part of one
        raise ApiError(f"{command.named} failed (exit {child.returncode}); run it yourself to see why")
    return printed.decode("utf-8", "replace") if shown is False else ""


class KeyHelper:
    """The key the helper printed, fetched again when its TTL has passed or after a refusal."""

    def __init__(self, command: Command, ttl_seconds: float, env: Mapping[str, str]) -> None:
        self._command = command
        self._ttl = ttl_seconds
        self._env = dict(env)
        self._key: str | None = None
        self._fetched = 0.0

    @property
    def stale(self) -> bool:
        return self._key is None or time.monotonic() - self._fetched >= self._ttl

    @property
    def current(self) -> str | None:
        """The last key printed (for the error filter), without running anything."""
        return self._key

    def key(self) -> str:
        """The key, fetched anew when stale (blocking: call it off the event loop)."""
        if self._key is None or self.stale:
            key = run(self._command, self._env).strip()
            if not key or not set(key) <= _KEY_CHARS:
                raise ApiError(f"{self._command.named} must print one key (printable ASCII, no spaces) on stdout")
            self._key, self._fetched = key, time.monotonic()
        return self._key

    def expire(self) -> None:
        """After a 401/403: the next `key()` runs the helper again."""
        self._fetched = -self._ttl


@dataclass(frozen=True, slots=True)
class AwsKeys:
    """What awsCredentialExport printed; `expires`: seconds since the epoch, None when it did not say."""

    access_key: str
    secret_key: str
    session_token: str | None
    expires: float | None

    def options(self) -> dict[str, Any]:
        """As the SDK's Bedrock client takes them."""
        token = self.session_token
        return {"aws_access_key": self.access_key, "aws_secret_key": self.secret_key, "aws_session_token": token}


def aws_keys(command: Command, env: Mapping[str, str]) -> AwsKeys:
    """Runs awsCredentialExport and reads its JSON: Claude Code's `{"Credentials": {"AccessKeyId", …}}` (STS's
    shape), or `aws configure export-credentials`' flat one; `Expiration` (ISO 8601) when given."""
    printed = run(command, env)
    wrong = ApiError(f"{command.named} must print JSON with Credentials.AccessKeyId and SecretAccessKey")
    try:
        data: object = json.loads(printed)
    except ValueError:
        raise wrong from None
    if isinstance(data, dict) and isinstance(inner := cast(dict[str, Any], data).get("Credentials"), dict):
        data = cast(dict[str, Any], inner)
    if not isinstance(data, dict):
        raise wrong
    found = cast(dict[str, Any], data)
    access, secret, token = (found.get(k) for k in ("AccessKeyId", "SecretAccessKey", "SessionToken"))
    if not isinstance(access, str) or not isinstance(secret, str) or not access or not secret:
        raise wrong
    return AwsKeys(access, secret, token if isinstance(token, str) and token else None, _epoch(found.get("Expiration")))


def _epoch(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when.timestamp() if when.tzinfo is not None else None  # a time without a zone is no deadline we can keep
