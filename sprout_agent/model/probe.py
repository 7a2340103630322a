"""`sprout-agent doctor`'s one request: a 1-token streamed message through the session's own client (its
credentials, renewals and betas), and which of reachable, credentials accepted, model served and streaming held."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sprout_agent.core.errors import ApiError
from sprout_agent.core.messages import Message, Text
from sprout_agent.core.protocols import ModelRequest
from sprout_agent.model.sdk_errors import failure_kind

if TYPE_CHECKING:
    from sprout_agent.model.client import AnthropicModel

STAGES = ("reachable", "credentials", "model", "streaming")  # in the order a request passes them
REQUEST = ModelRequest("", (Message("user", (Text("Reply with the word ok."),)),), max_tokens=1, web=False)


@dataclass(frozen=True, slots=True)
class Probe:
    """The first stage that failed (None: all held; "request": a failure no stage explains) and its one line."""

    failed: str | None
    said: str = ""
    exit_code: int = 0

    def held(self, stage: str) -> bool | None:
        """True: it held; False: it failed; None: not reached."""
        if self.failed is None:
            return True
        if self.failed == "request":
            return True if stage in STAGES[:2] else None
        at, failed_at = STAGES.index(stage), STAGES.index(self.failed)
        return True if at < failed_at else False if at == failed_at else None


async def probe(model: AnthropicModel) -> Probe:
    """Sends REQUEST once (the client's renewal after a 401/403 included), thinking off, no effort: the cheapest
    request the model takes."""
    model.thinking, model.effort = "off", None
    try:
        await model.complete(REQUEST, lambda _: None)
    except ApiError as error:
        return Probe(_stage(error), str(error), error.exit_code)
    return Probe(None)


def _stage(error: ApiError) -> str:
    import anthropic

    cause = error.__cause__
    kind = failure_kind(cause, anthropic) if isinstance(cause, Exception) else None
    if kind == "credentials" or error.status in (401, 403):
        return "credentials"
    if kind == "cut":
        return "streaming"
    if kind in ("connection", "timeout") or error.status is None:
        return "reachable"
    said = str(error).lower()
    if error.status == 404 or (error.status == 400 and "model" in said):  # Bedrock: "model identifier is invalid"
        return "model"
    return "request"
