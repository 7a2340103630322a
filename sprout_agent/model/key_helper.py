"""SPROUT_AGENT_API_KEY_HELPER (Claude Code's `apiKeyHelper`): a command of yours that prints a gateway's key, run
again once CLAUDE_CODE_API_KEY_HELPER_TTL_MS has passed and once after a 401/403. The key lives only in this
process's memory: never in an environment, a log or a transcript (errors say what failed, never what it printed)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Mapping

from sprout_agent.core.errors import ApiError

HELPER_TIMEOUT_S = 30.0  # a helper that asks a vault or an SSO login may take a while; never forever
_KEY = re.compile(r"[\x21-\x7e]+")  # a key goes in a header: printable ASCII, no spaces


class KeyHelper:
    """Runs the helper (by `/bin/sh -c`, as Claude Code does, in your environment) when its key is stale."""

    def __init__(self, command: str, ttl_seconds: float, env: Mapping[str, str]) -> None:
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
            self._key = self._run()
            self._fetched = time.monotonic()
        return self._key

    def expire(self) -> None:
        """After a 401/403: the next `key()` runs the helper again."""
        self._fetched = -self._ttl

    def _run(self) -> str:
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", self._command],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                env=self._env,
                timeout=HELPER_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ApiError(f"SPROUT_AGENT_API_KEY_HELPER did not print a key within {HELPER_TIMEOUT_S:g} s") from None
        except OSError as error:
            raise ApiError(f"SPROUT_AGENT_API_KEY_HELPER could not be run: {error.strerror}") from None
        key = done.stdout.strip()
        if done.returncode != 0:  # its output is not shown: it may hold the key, or part of one
            raise ApiError(f"SPROUT_AGENT_API_KEY_HELPER failed (exit {done.returncode}); run it yourself to see why")
        if not _KEY.fullmatch(key):
            raise ApiError("SPROUT_AGENT_API_KEY_HELPER must print one key (printable ASCII, no spaces) on stdout")
        return key
