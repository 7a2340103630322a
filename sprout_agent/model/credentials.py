"""Credentials that outlive the session's first hour: fetched by your commands at start-up, fetched again before
they expire (a helper's TTL, awsCredentialExport's Expiration), and once after a 401/403 (the login refreshed, the
cloud's credentials read again), so a turn is never lost to an expired key (docs/providers.md)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread

from sprout_agent.config.credential_commands import CredentialCommands
from sprout_agent.config.provider import Provider
from sprout_agent.model.key_helper import AwsKeys, KeyHelper, aws_keys, run
from sprout_agent.model.providers import renew

REFRESH_MARGIN_S = 300.0  # AWS keys are fetched again this long before they expire: no request starts on old ones


class Renewal:
    """The chosen provider's commands, and when to run them."""

    def __init__(
        self,
        provider: Provider,
        commands: CredentialCommands | None = None,
        env: Mapping[str, str] | None = None,
        *,
        ttl_seconds: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._provider = provider
        self._commands = commands or CredentialCommands()
        self._env = dict(env or {})
        self._clock = clock
        helper = self._commands.key_helper
        self._helper = KeyHelper(helper, ttl_seconds, self._env) if helper is not None else None
        self._aws: AwsKeys | None = None

    def start(self, api_key: str | None) -> str | None:
        """The key the client starts with (the helper's, else `api_key`), the AWS keys fetched (blocking)."""
        if self._commands.aws_export is not None:
            self._aws = aws_keys(self._commands.aws_export, self._env)
        return self._helper.key() if self._helper is not None else api_key

    def client_options(self) -> dict[str, Any]:
        """What the provider's client is built with: awsCredentialExport's keys, else nothing (its own chain)."""
        return self._aws.options() if self._aws is not None else {}

    def known(self) -> dict[str, str]:
        """The secrets the commands gave, by a secret-sounding name: the error filter replaces them."""
        known = {"SPROUT_AGENT_API_KEY_HELPER": self._helper.current or ""} if self._helper is not None else {}
        if self._aws is not None:
            known |= {"aws_secret_key": self._aws.secret_key, "aws_session_token": self._aws.session_token or ""}
        return known

    async def before_request(self, client: Any) -> None:
        """The helper's key once its TTL has passed; AWS keys within REFRESH_MARGIN_S of their expiry."""
        if self._helper is not None and self._helper.stale:
            client.api_key = await anyio.to_thread.run_sync(self._helper.key)
        expires = self._aws.expires if self._aws is not None else None
        if expires is not None and expires - self._clock() < REFRESH_MARGIN_S:
            await self._export(client)

    async def after_refusal(self, client: Any) -> bool:
        """After a 401/403: awsAuthRefresh or gcpAuthRefresh first (its output shown: a login may print a code),
        then the key or the keys fetched again, or the cloud's credential chain read again. False: nothing to renew."""
        if (refresh := self._commands.refresh) is not None:
            await anyio.to_thread.run_sync(lambda: run(refresh, self._env, shown=True))
        if self._helper is not None:
            self._helper.expire()
            client.api_key = await anyio.to_thread.run_sync(self._helper.key)
            return True
        if self._aws is not None:
            await self._export(client)
            return True
        return renew(client, self._provider)

    async def _export(self, client: Any) -> None:
        export = self._commands.aws_export
        assert export is not None
        self._aws = await anyio.to_thread.run_sync(aws_keys, export, self._env)
        for name, value in self._aws.options().items():
            setattr(client, name, value)  # read by the SDK's Bedrock client at each request's signing
