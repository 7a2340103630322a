"""A server's `sampling/createMessage` run through the session's own model: only once approved, within the
request's `max_tokens` and our output cap, with no tools, counted in the ledger and the budget.

Stdlib only (the MCP side, callbacks.py, turns the request into a `SamplingRequest`). The model arrives
after the servers have started (anthropic loads meanwhile), through a late-bound handle: a request before that is
refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sprout_agent.core.events import Event, ServerAsked
from sprout_agent.core.late import Handle
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.messages import Image, Message, Text
from sprout_agent.core.protocols import Model, ModelReply, ModelRequest

SUMMARY_CHARS = 300  # of the last message, in the question and the event line


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    server: str
    messages: tuple[Message, ...]  # text and images only (the MCP side rejects the rest)
    system: str
    max_tokens: int

    def summary(self) -> str:
        """One line for a person: how many messages, the last one's text (the server's: untrusted)."""
        last = self.messages[-1] if self.messages else None
        words = " ".join(b.text for b in last.content if isinstance(b, Text)) if last is not None else ""
        images = sum(isinstance(b, Image) for m in self.messages for b in m.content)
        said = " ".join(words.split())
        said = said if len(said) <= SUMMARY_CHARS else said[:SUMMARY_CHARS] + "…"
        extra = f", {images} image(s)" if images else ""
        return f"{len(self.messages)} message(s){extra}; the last: {said!r}"


# Whether a person (or a flag) lets this request run through the model.
Approve = Callable[[SamplingRequest], Awaitable[bool]]


class SamplingRefused(Exception):
    """Said to the server as the error of its request."""


async def always(request: SamplingRequest) -> bool:
    """`--allow-sampling`: every request is approved (still bounded and counted)."""
    del request
    return True


class Sampler:
    def __init__(
        self,
        *,
        model: Handle[Model],
        ledger: Ledger,
        emit: Callable[[Event], None],
        approve: Approve,
        max_output_tokens: int,
        max_budget_usd: float | None = None,
    ) -> None:
        self._model = model  # bound by the runtime once it has built the model
        self._ledger = ledger
        self._emit = emit
        self._approve = approve
        self._cap = max_output_tokens
        self._budget = max_budget_usd

    async def sample(self, request: SamplingRequest) -> ModelReply:
        """The model's reply (text, or nothing usable: the caller checks); raises `SamplingRefused`."""
        self._check(request)
        if not await self._approve(request):
            self._refused(request, "the user declined")
        model = self._model.get()  # bound: checked above, and a binding stays
        bounded = ModelRequest(request.system, request.messages, (), max_tokens=min(request.max_tokens, self._cap))
        reply = await model.complete(bounded, lambda _text: None)
        cost = self._ledger.add(reply.usage)
        spent = f"{reply.usage.output_tokens} tokens out, ${cost:.4f}"
        self._emit(ServerAsked(request.server, "sampling", request.summary(), "sampled", spent))
        return reply

    def _check(self, request: SamplingRequest) -> None:
        if not self._model.bound:
            self._refused(request, "the model is not ready yet")
        if not request.messages:
            self._refused(request, "no messages")
        if request.max_tokens < 1:
            self._refused(request, "max_tokens must be at least 1")
        if self._budget is not None and self._ledger.cost >= self._budget:
            self._refused(request, "the session's budget is spent")

    def _refused(self, request: SamplingRequest, why: str) -> None:
        self._emit(ServerAsked(request.server, "sampling", request.summary(), "refused", why))
        raise SamplingRefused(f"sampling refused: {why}")


def reply_text(reply: ModelReply) -> str:
    return "".join(block.text for block in reply.content if isinstance(block, Text))
