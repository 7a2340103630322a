"""Claude Code's hook output and matchers, read the same way for every source that speaks them: the SDKs' hook
callbacks (faces/sdk/sdk_hooks.py) and the settings files' command hooks (session/command_hooks.py)."""

from __future__ import annotations

import json
import re
from typing import Any, cast

from sprout_agent.core.hooks import program_callbacks as cb
from sprout_agent.core.hooks.contract import truncate

Body = dict[str, Any]
_SIMPLE_MATCHER = re.compile(r"[A-Za-z0-9_|]+")  # Claude Code: exact names joined by `|`; anything else a regex
_PERMISSIONS = ("allow", "deny", "ask")


class HookCallbackError(ValueError):
    """A hook answered with something Claude Code rejects (a failure, not a decision)."""


def matches(pattern: str | None, subject: str | None) -> bool:
    """Claude Code's matcher: none, "" or "*" match everything; `A|B` exact names; anything else a regex."""
    if pattern in (None, "", "*"):
        return True
    if subject is None:
        return False
    if _SIMPLE_MATCHER.fullmatch(pattern):
        return subject in pattern.split("|")
    try:
        return re.search(pattern, subject) is not None
    except re.error:
        return False


def matcher_error(pattern: object) -> str | None:
    """Why a matcher is not a regular expression Claude Code would use, or None."""
    if not isinstance(pattern, str) or not pattern or pattern == "*" or _SIMPLE_MATCHER.fullmatch(pattern):
        return None
    try:
        re.compile(pattern)
    except re.error as error:
        return str(error)
    return None


def read_output(output: Body) -> cb.CallbackAnswer:
    """A `SyncHookJSONOutput` as Claude Code reads it; `async: true` is no answer (it does not wait for it)."""
    if output.get("async") is True:
        return cb.CallbackAnswer()
    stop = None
    if output.get("continue") is False:
        stop = _text(output.get("stopReason"))
    decision, reason = output.get("decision"), _text(output.get("reason"))
    if decision not in (None, "block", "approve"):
        raise HookCallbackError(f"decision must be 'block' or 'approve', not {decision!r}")
    specific = output.get("hookSpecificOutput")
    specific = cast(Body, specific) if isinstance(specific, dict) else {}
    permission = specific.get("permissionDecision")
    if permission is not None and permission not in (*_PERMISSIONS, "defer"):
        raise HookCallbackError(f"permissionDecision must be allow, deny or ask, not {permission!r}")
    if decision == "approve" and permission is None:
        permission = "allow"  # the old PreToolUse form
    updated = specific.get("updatedInput")
    if updated is not None and (updated := tool_input(updated)) is None:
        raise HookCallbackError("updatedInput must be a JSON object of valid Unicode text")
    return cb.CallbackAnswer(
        context=_text(specific.get("additionalContext")),
        block=reason if decision == "block" else None,
        permission=permission if permission in _PERMISSIONS else None,
        permission_reason=_text(specific.get("permissionDecisionReason")),
        updated_input=updated,
        stop=stop,
    )


def tool_input(value: object) -> dict[str, object] | None:
    """An SDK's `updatedInput` as a call's input, or None when it cannot be one: not an object, or text the API
    would refuse (a lone surrogate would fail every later request of the session)."""
    if not isinstance(value, dict):
        return None
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except (UnicodeEncodeError, ValueError, RecursionError):
        return None
    return cast(dict[str, object], value)


def _text(value: object) -> str:
    """A text field of the answer, capped as an MCP hook's text is (contract.truncate)."""
    return truncate(value) if isinstance(value, str) else ""
