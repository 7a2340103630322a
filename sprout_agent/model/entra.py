"""Microsoft Entra ID for Foundry when no key is set (CLAUDE_CODE_USE_FOUNDRY=1 without ANTHROPIC_FOUNDRY_API_KEY):
azure-identity's DefaultAzureCredential, as Claude Code signs in, its token fetched again before it expires and,
after a 401, from a new credential (docs/providers.md). azure-identity is the `foundry` extra, imported only here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread

# The scope Claude Code asks Entra ID for (its Foundry client's); the resource's role assignment grants it.
SCOPE = "https://cognitiveservices.azure.com/.default"
REFRESH_MARGIN_S = 300.0  # a token this close to its expiry is not sent: no request starts on one about to lapse


class EntraToken:
    """The SDK's `azure_ad_token_provider`: called before each request, it answers the token it holds until that is
    within REFRESH_MARGIN_S of its expiry. The token stays in this object: never in an environment or a text."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._credential: Any = None
        self._token: tuple[str, float] | None = None  # (token, expires_on: seconds since the epoch)

    async def __call__(self) -> str:
        held = self._token
        if held is None or held[1] - self._clock() < REFRESH_MARGIN_S:
            held = self._token = await anyio.to_thread.run_sync(self._fetch)
        return held[0]

    def _fetch(self) -> tuple[str, float]:
        """Blocking (the credential asks Entra ID, a managed identity endpoint or `az`): off the loop."""
        if self._credential is None:  # the foundry extra, checked before the run starts (config/provider.py)
            from azure.identity import DefaultAzureCredential  # the extra: loaded only when used

            self._credential = DefaultAzureCredential()
        got = self._credential.get_token(SCOPE)  # a failure is azure.core's ClientAuthenticationError: sdk_errors.py
        return str(got.token), float(got.expires_on)

    def renew(self) -> None:
        """After a 401: a new credential (its own cache empty), so the next request's token is fetched anew."""
        self._credential, self._token = None, None


def token_source(token: str) -> Callable[[], str]:
    """ANTHROPIC_FOUNDRY_AUTH_TOKEN: a bearer token you give, sent as it is (Claude Code's)."""
    return lambda: token
