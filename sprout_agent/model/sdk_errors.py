"""The SDK's errors read for our retry policy and messages: the API's error type and message, a retry-after
header, what kind of failure it was (a credential the cloud's library could not find included)."""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast

from sprout_agent.model.reply_stream import StreamCut

if TYPE_CHECKING:
    import anthropic


def failure_kind(error: Exception, sdk: Any) -> str | None:
    """`timeout`, `cut`, `connection`, `credentials` or the API's error type; None for an error that is not a failed
    request (re-raised as it is)."""
    if isinstance(error, sdk.APITimeoutError):
        return "timeout"
    if isinstance(error, StreamCut):
        return "cut"
    if isinstance(error, sdk.APIStatusError):
        return error_type(cast(Any, error))
    if isinstance(error, sdk.APIError) or is_transport_error(error):
        return "connection"
    return "credentials" if _is_credentials_error(error) else None


def _is_credentials_error(error: Exception) -> bool:
    """botocore's NoCredentialsError and kin, google-auth's DefaultCredentialsError and RefreshError, azure-identity's
    ClientAuthenticationError (Entra ID found no credential), and the SDK's own "Could not resolve AWS credentials" /
    "Could not resolve project_id", raised before anything is sent."""
    if type(error).__module__.startswith(("botocore", "google.auth", "azure.core", "azure.identity")):
        return True
    said = str(error).lower()
    return isinstance(error, RuntimeError | ValueError) and ("credentials" in said or "project_id" in said)


def is_transport_error(error: Exception) -> bool:
    """A read timeout or reset in the middle of a stream escapes the SDK as a raw httpx2/httpcore2 error."""
    return type(error).__module__.startswith(("httpx", "httpcore"))


def error_type(error: anthropic.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(inner, dict):
            return str(inner.get("type", ""))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return ""


def api_message(error: anthropic.APIStatusError) -> str:
    """The API's own `error.message`, one line; the SDK's text (with the whole body) when there is none."""
    body = error.body
    inner = body.get("error") if isinstance(body, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    message = inner.get("message") if isinstance(inner, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return " ".join(str(message if message else error.message).split())  # pyright: ignore[reportUnknownArgumentType]


def retry_after_header(error: anthropic.APIStatusError) -> float | None:
    headers = error.response.headers
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return min(60.0, float(ms) / 1000)
        if (seconds := headers.get("retry-after")) is not None:
            return min(60.0, float(seconds))
    except ValueError:
        return None
    return None


def describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    text = " ".join(str(message).split())
    return f"{status}: {text}" if status else text


def retry_reason(error: Exception, sdk: Any) -> str:
    """Why a request is retried, as a person reads it: `500 (internal server error)`, `529 (overloaded)`,
    `connection failed`; never a Python repr (the final failure, if it comes, says what the API said)."""
    status = getattr(error, "status_code", None)
    if isinstance(error, sdk.APIStatusError) and status != 200:
        try:
            return f"{status} ({HTTPStatus(status).phrase.lower()})"
        except ValueError:
            kind = error_type(cast(Any, error)).removesuffix("_error").replace("_", " ")
            return f"{status} ({kind or 'error'})"
    if isinstance(error, StreamCut):
        return "the reply stream was cut"
    name = type(error).__name__.lower()
    if "timeout" in name:
        return "timed out"
    return "connection failed" if is_transport_error(error) or "connection" in name else "the reply stream failed"
