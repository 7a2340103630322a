"""Other clients' `mcpServers` files read as they mean them: keys we do not know, and `timeout` in milliseconds.

A `.mcp.json` written for Claude Code, Claude Desktop, Cline or Cursor must work unchanged, so what those files
carry that means nothing here is a notice naming the key, never a reason to drop the server or the run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import cast

from sprout_agent.core.errors import ConfigError

# Claude Code's minimum for a server's `timeout`: it ignores a smaller value, which is almost always a number
# of seconds written for a client that read it so (sprout-agent before 0.2 among them).
MIN_TIMEOUT_MS = 1000
# What other clients' keys do, when a notice can say more than "ignored".
_HINTS = {
    "alwaysAllow": "allow tools with --allow-tools SERVER__TOOL",
    "autoApprove": "allow tools with --allow-tools SERVER__TOOL",
}


def unknown_key_notices(keys: Iterable[str], known: frozenset[str], where: str) -> list[str]:
    """One notice per key an entry (or a file's top level) has that we do not read."""
    notices: list[str] = []
    for key in keys:
        if key in known:
            continue
        hint = _HINTS.get(key)
        notices.append(f"{where}: unknown key '{key}' ignored" + (f" ({hint})" if hint else ""))
    return notices


def call_timeout(value: object, where: str, notices: list[str]) -> float | None:
    """A server's `timeout` (milliseconds, as Claude Code reads it: the bound on each of its tool calls) in
    seconds; None when absent or ignored. A value under 1000 is ignored with a notice: it reads as seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{where}.timeout must be a positive number of milliseconds")
    milliseconds = float(cast(float, value))
    if milliseconds < MIN_TIMEOUT_MS:
        notices.append(
            f"{where}.timeout {value:g} ignored: timeout is in milliseconds (as in Claude Code), at least "
            f"{MIN_TIMEOUT_MS}; for {value:g} seconds write {milliseconds * 1000:g}"
        )
        return None
    return milliseconds / 1000
