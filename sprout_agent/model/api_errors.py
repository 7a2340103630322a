"""A failed model request in words a person can act on: what happened, what to check, how often we tried.

Pure text (no anthropic import): client.py extracts the status, the error type and the API's own message.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_BASE_URL = "https://api.anthropic.com"


@dataclass(frozen=True, slots=True)
class Failure:
    """What client.py knows about the last attempt."""

    status: int | None  # HTTP status; None for a connection error or a cut stream; 200 for a mid-stream error
    error_type: str  # the API's `error.type` ("overloaded_error", …), or "connection", "timeout", "cut"
    message: str  # the API's own message (one line), or the transport's
    attempts: int  # requests actually sent for this call, retries included
    model: str
    base_url: str | None  # None: the default endpoint


def explain(failure: Failure) -> str:
    """`API request failed: 401: the API key was rejected; check ANTHROPIC_API_KEY (…) [1 attempt]`; the base URL
    is named (`[5 attempts to http://…]`) when it is not the default, since a wrong one explains most failures."""
    what = _what(failure)
    custom = failure.base_url and failure.base_url.rstrip("/") != DEFAULT_BASE_URL
    where = f" to {failure.base_url}" if custom else ""
    said = f" (the API said: {failure.message})" if failure.message and failure.status is not None else ""
    if failure.status is None and failure.message:
        said = f" ({failure.message})"
    tries = f"{failure.attempts} attempt{'s' if failure.attempts != 1 else ''}"
    prefix = f"{failure.status}: " if failure.status not in (None, 200) else ""
    return f"API request failed: {prefix}{what}{said} [{tries}{where}]"


def _what(f: Failure) -> str:  # noqa: C901 - one arm per documented status
    status, kind = f.status, f.error_type
    if status == 401 or kind == "authentication_error":
        return "the API key was rejected; check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"
    if status == 403 or kind == "permission_error":
        return f"the API key may not use this model or endpoint; check the key's access to {f.model}"
    if status == 404 or kind == "not_found_error":
        hint = " or ANTHROPIC_BASE_URL" if f.base_url else ""
        return f"model {f.model} not found; check --model / ANTHROPIC_MODEL{hint}"
    if status == 413 or kind == "request_too_large":
        return "the request is too large; /compact or attach less"
    if status == 429 or kind == "rate_limit_error":
        return "rate limited; wait a moment and try again, or lower the request rate"
    if status == 529 or kind == "overloaded_error":
        return "the API is overloaded; try again in a few minutes"
    if kind == "connection":
        return "could not reach the API; check the network" + (" and ANTHROPIC_BASE_URL" if f.base_url else "")
    if kind == "timeout":
        return "the API did not answer in time; check the network, or try again"
    if kind == "cut":
        return "the reply stream ended before the answer was complete; try again"
    if status is not None and status >= 500:
        return "the API had an internal error; try again shortly"
    if status == 400 or kind == "invalid_request_error":
        return "the API refused the request (invalid_request_error)"
    return f"the API answered with an error ({kind or 'unknown'})"
