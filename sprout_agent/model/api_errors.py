"""A failed model request in words a person can act on: what happened, what to check, how often we tried.

Pure text (no anthropic import): client.py extracts the status, the error type and the API's own message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sprout_agent.config.provider import Provider

DEFAULT_BASE_URL = "https://api.anthropic.com"

# What to check, by provider, for what fails most there: the credentials, the model's access, the model id, the
# endpoint. Each names the variables to fix (docs/providers.md); `{model}` and `{region}` are filled in.
_HINTS: dict[tuple[str, str], str] = {
    ("bedrock", "auth"): "AWS refused the credentials; check AWS_PROFILE (aws sso login), AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK",
    ("bedrock", "forbidden"): "these AWS credentials may not invoke {model} in AWS_REGION={region}; enable the "
    "model's access in Bedrock, or check ANTHROPIC_MODEL",
    ("bedrock", "not_found"): "model {model} is not served in AWS_REGION={region}; check ANTHROPIC_MODEL (an "
    "inference profile id such as us.anthropic.…) and AWS_REGION",
    ("bedrock", "connection"): "could not reach Bedrock; check the network, AWS_REGION and ANTHROPIC_BEDROCK_BASE_URL",
    ("bedrock", "credentials"): "no AWS credentials were found; set AWS_PROFILE (and run aws sso login), "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK",
    ("vertex", "auth"): "Google refused the credentials; run gcloud auth application-default login, or check "
    "GOOGLE_APPLICATION_CREDENTIALS",
    ("vertex", "forbidden"): "these Google credentials may not use {model}; enable it in the Model Garden, or check "
    "ANTHROPIC_VERTEX_PROJECT_ID",
    ("vertex", "not_found"): "model {model} is not served in CLOUD_ML_REGION={region}; check ANTHROPIC_MODEL (such as "
    "claude-sonnet-4-5@20250929), CLOUD_ML_REGION and ANTHROPIC_VERTEX_PROJECT_ID",
    ("vertex", "connection"): "could not reach Vertex AI; check the network, CLOUD_ML_REGION and "
    "ANTHROPIC_VERTEX_BASE_URL",
    ("vertex", "credentials"): "no Google credentials were found; run gcloud auth application-default login, set "
    "GOOGLE_APPLICATION_CREDENTIALS, and ANTHROPIC_VERTEX_PROJECT_ID",
    ("foundry", "auth"): "Foundry refused the credentials; check ANTHROPIC_FOUNDRY_API_KEY (or, with Entra ID, "
    "az login, AZURE_CLIENT_ID and AZURE_TENANT_ID)",
    ("foundry", "forbidden"): "these Foundry credentials may not use {model}; check ANTHROPIC_FOUNDRY_API_KEY (or "
    "the Entra ID identity's role on the resource)",
    ("foundry", "credentials"): "Entra ID found no credentials; set ANTHROPIC_FOUNDRY_API_KEY, or sign in with "
    "az login, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET",
    ("foundry", "not_found"): "deployment {model} not found; check ANTHROPIC_MODEL (the deployment's name) and "
    "ANTHROPIC_FOUNDRY_RESOURCE",
    ("foundry", "connection"): "could not reach Foundry; check the network and ANTHROPIC_FOUNDRY_RESOURCE "
    "(or ANTHROPIC_FOUNDRY_BASE_URL)",
    ("anthropic", "credentials"): "no credentials; check ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or "
    "SPROUT_AGENT_API_KEY_HELPER",
}


@dataclass(frozen=True, slots=True)
class Failure:
    """What client.py knows about the last attempt."""

    status: int | None  # HTTP status; None for a connection error or a cut stream; 200 for a mid-stream error
    error_type: str  # the API's `error.type` ("overloaded_error", …), or "connection", "timeout", "cut"
    message: str  # the API's own message (one line), or the transport's
    attempts: int  # requests actually sent for this call, retries included
    model: str
    base_url: str | None  # None: the default endpoint
    provider: Provider = field(default_factory=Provider)  # who answered: the hints name its variables


def explain(failure: Failure) -> str:
    """`API request failed: 401: the API key was rejected; check ANTHROPIC_API_KEY (…) [1 attempt]`; the base URL
    is named (`[5 attempts to http://…]`) when it is not the default, since a wrong one explains most failures."""
    what = _what(failure)
    custom = failure.base_url and failure.base_url.rstrip("/") != DEFAULT_BASE_URL
    where = f" to {failure.base_url}" if custom else ""
    if failure.provider.kind != "anthropic":
        where = f" to {failure.provider.describe()}"
    said = f" (the API said: {failure.message})" if failure.message and failure.status is not None else ""
    if failure.status is None and failure.message:
        said = f" ({failure.message})"
    tries = f"{failure.attempts} attempt{'s' if failure.attempts != 1 else ''}"
    prefix = f"{failure.status}: " if failure.status not in (None, 200) else ""
    return f"API request failed: {prefix}{what}{said} [{tries}{where}]"


def _what(f: Failure) -> str:  # noqa: C901 - one arm per documented status
    status, kind = f.status, f.error_type
    hint = _HINTS.get((f.provider.kind, _topic(status, kind)))
    if hint is not None:
        return hint.format(model=f.model, region=f.provider.region)
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


def _topic(status: int | None, kind: str) -> str:
    """Which of the provider hints a failure is about ("" for none)."""
    if status == 401 or kind == "authentication_error":
        return "auth"
    if status == 403 or kind in ("permission_error", "AccessDeniedException"):
        return "forbidden"
    if status == 404 or kind in ("not_found_error", "ResourceNotFoundException"):
        return "not_found"
    return kind if kind in ("connection", "credentials") else ""
