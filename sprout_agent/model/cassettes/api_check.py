"""A replay's API: each request the player serves goes through the Messages API's rules (api_rules.py), as the
real API would check it, whatever the wire (first party, a gateway, Bedrock, Vertex), so a replay cannot succeed
on a request the API would refuse. The opaque values a request sends back are vouched for by the cassette, and the
session's model is held to the capabilities its recorded facts name. Stdlib and our settings' names only."""

from __future__ import annotations

import re
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from sprout_agent.config.settings import EFFORT_LEVELS
from sprout_agent.model.cassettes.api_rules import COUNT_TOKENS, MESSAGES, THINKING_KINDS, Vouched, endpoint_problems
from sprout_agent.model.cassettes.format import Cassette, Exchange, Json

_BEDROCK = re.compile(r".*/model/(?P<model>[^/]+)/invoke(?:-with-response-stream)?")
_VERTEX = re.compile(r".*/publishers/anthropic/models/(?P<model>[^/:]+):(?:streamRawPredict|rawPredict)")


def messages_request(path: str, body: object) -> tuple[str, object] | None:
    """The Messages API request a request on the wire stands for: (its endpoint, its body), the model taken from the
    path where the wire puts it there; None for a path that is neither (not checked)."""
    route = urlsplit(path).path
    for endpoint in (COUNT_TOKENS, MESSAGES):  # a gateway or Foundry puts its own prefix before the API's path
        if route.endswith(endpoint):
            return endpoint, body
    found = _BEDROCK.fullmatch(route) or _VERTEX.fullmatch(route)
    if found is None or not isinstance(body, dict):
        return None
    fields = {k: v for k, v in cast(Json, body).items() if k != "anthropic_version"}
    model = unquote(found.group("model"))
    if model == "count-tokens":  # Vertex counts at models/count-tokens:rawPredict, the model in the body
        return COUNT_TOKENS, fields
    return MESSAGES, {"model": model, **fields, "stream": True} if found.re is _BEDROCK else {"model": model, **fields}


class ApiCheck:
    """The rules for one cassette's replay. A thinking signature, a redacted_thinking block's data and a search
    result's encrypted content are the API's to issue: one is taken when the cassette shows the API issued it (in an
    answer) or accepted it (in a request it answered with success), for the same model."""

    def __init__(self, cassette: Cassette) -> None:
        facts = cassette.header.get("facts")
        self._model = str(cassette.header.get("model") or "")
        self._capabilities = capabilities_of(cast(Json, facts)) if isinstance(facts, dict) else None
        self._thinking: set[tuple[str, str, str]] = set()
        self._redacted: set[tuple[str, str]] = set()
        self._results: set[tuple[str, str]] = set()
        for exchange in cassette.exchanges:
            self._vouch(exchange)
        self.vouched = Vouched(
            thinking=lambda model, text, signature: (model, text, str(signature)) in self._thinking,
            redacted=lambda model, data: (model, str(data)) in self._redacted,
            search_result=lambda url, data: (str(url), str(data)) in self._results,
        )

    def problems(self, request: Json) -> list[str]:
        """Every reason the API would refuse `request` (method, path, headers, body), each naming where as a path."""
        found = messages_request(str(request.get("path", "")), request.get("body"))
        if request.get("method") != "POST" or found is None:
            return []
        endpoint, body = found
        known = self._capabilities if _model_of(body) == self._model else None  # a subagent's model: not known here
        return endpoint_problems(endpoint, body, self.vouched, known)

    def _vouch(self, exchange: Exchange) -> None:
        asked = messages_request(str(exchange.request.get("path", "")), exchange.request.get("body"))
        body = cast(Json, asked[1]) if asked is not None and isinstance(asked[1], dict) else {}
        model = str(body.get("model", ""))
        blocks = answer_blocks(exchange.response)
        if accepted(exchange.response):
            for message in _dicts(body.get("messages")):
                blocks += _dicts(message.get("content"))
        for block in blocks:
            self._keep(model, block)

    def _keep(self, model: str, block: Json) -> None:
        kind = block.get("type")
        if kind == "thinking":
            self._thinking.add((model, str(block.get("thinking")), str(block.get("signature"))))
        elif kind == "redacted_thinking":
            self._redacted.add((model, str(block.get("data"))))
        elif kind == "web_search_tool_result":
            for result in _dicts(block.get("content")):
                self._results.add((str(result.get("url")), str(result.get("encrypted_content"))))


def capabilities_of(facts: Json) -> Json:
    """The Models API `capabilities` that the session's model facts (the cassette header's, as recorded) stand for:
    a fact left unknown counts as supported, so a request is refused only for what the model was known not to take
    (a thinking type, an effort level, strict tool schemas, web search), as the API refuses it."""
    types, levels = facts.get("thinking_types"), facts.get("effort_levels")

    def given(value: object, name: str) -> bool:  # unknown (None, or not a list): supported
        return not isinstance(value, list) or name in cast(list[object], value)

    effort = {level: {"supported": given(levels, level)} for level in EFFORT_LEVELS}
    return {
        "thinking": {"supported": True, "types": {kind: {"supported": given(types, kind)} for kind in THINKING_KINDS}},
        "effort": {"supported": levels != [], **effort},
        "structured_outputs": {"supported": facts.get("structured_outputs") is not False},
        "server_tools": {"web_search": {"supported": facts.get("web_search") is not False}},
    }


def _model_of(body: object) -> object:
    return cast(Json, body).get("model") if isinstance(body, dict) else None


def accepted(response: Json) -> bool:
    """Whether the recorded answer is the API's success (not an error status, not a failure to answer)."""
    status = response.get("status")
    return "error" not in response and isinstance(status, int) and 200 <= status < 300


def answer_blocks(response: Json) -> list[Json]:
    """The content blocks of a recorded answer: a JSON message's, or a stream's as its events built them."""
    body = response.get("body")
    if isinstance(body, dict):
        return _dicts(cast(Json, body).get("content"))
    blocks: dict[object, Json] = {}
    for event in _dicts(response.get("events")):
        data = event.get("data")
        data = cast(Json, data) if isinstance(data, dict) else {}
        start, delta = data.get("content_block"), data.get("delta")
        if data.get("type") == "content_block_start" and isinstance(start, dict):
            blocks[data.get("index")] = dict(cast(Json, start))
        elif data.get("type") == "content_block_delta" and isinstance(delta, dict):
            _apply(blocks.get(data.get("index")), cast(Json, delta))
    return list(blocks.values())


def _apply(block: Json | None, delta: Json) -> None:
    """A thinking block's text and signature, which stream as deltas (the rest is not an opaque value)."""
    if block is None:
        return
    if delta.get("type") == "thinking_delta":
        block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
    elif delta.get("type") == "signature_delta":
        block["signature"] = str(delta.get("signature") or "")


def _dicts(value: object) -> list[Json]:
    return [cast(Json, v) for v in cast(list[Any], value) if isinstance(v, dict)] if isinstance(value, list) else []
