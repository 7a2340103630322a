"""The fake API's side of the Messages API's rules: the rules themselves are the package's
(sprout_agent/model/cassettes/api_rules.py, the ones a replay applies), with the opaque values the fakes issue
checked as the fakes sealed them (a thinking signature, a redacted_thinking block's data, a search result's
encrypted content).

The fake HTTP server (tests/fake_anthropic.py) and the scripted model (tests/loop_doubles.py) both run a request
body through `request_problems`, so a history the real API would refuse fails the test that made it.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from sprout_agent.model.cassettes import api_rules
from sprout_agent.model.cassettes.api_rules import COUNT_TOKENS, MESSAGES, Vouched

__all__ = ["COUNT_TOKENS", "FAKE_SEALS", "MESSAGES", "InvalidRequest", "encrypted", "sealed", "sign"]

Json = dict[str, Any]


def sign(model: str, thinking: str) -> str:
    """The signature the fakes give a thinking block: bound to its text and to the model that wrote it."""
    return "sig_" + hashlib.sha256(f"{model}\n{thinking}".encode()).hexdigest()


def sealed(model: str, secret: str) -> str:
    """A redacted_thinking block's `data`: opaque, but the fakes can tell whether it came back unchanged."""
    payload = base64.b64encode(secret.encode()).decode()
    return f"{payload}.{_mac(model, payload)}"


def encrypted(url: str) -> str:
    """A search result's `encrypted_content` as the fake gives it: opaque, but checkable when it comes back."""
    payload = base64.b64encode(url.encode()).decode()
    return f"{payload}.{hashlib.sha256(payload.encode()).hexdigest()[:24]}"


def _mac(model: str, payload: str) -> str:
    return hashlib.sha256(f"{model}\n{payload}".encode()).hexdigest()[:32]


def _unsealed(model: str, data: object) -> bool:
    if not isinstance(data, str) or "." not in data:
        return False
    payload, mac = data.rsplit(".", 1)
    return mac == _mac(model, payload)


FAKE_SEALS = Vouched(
    thinking=lambda model, text, signature: signature == sign(model, text),
    redacted=_unsealed,
    search_result=lambda url, data: isinstance(url, str) and data == encrypted(url),
)


class InvalidRequest(AssertionError):
    """A request the real API would refuse: a bug in whatever built it, so the test fails loudly."""


def assert_valid_request(body: Json) -> None:
    problems = request_problems(body)
    if problems:
        raise InvalidRequest("the API would refuse this request:\n  " + "\n  ".join(problems))


def endpoint_problems(path: str, body: object, capabilities: Json | None = None) -> list[str]:
    """Every reason the API would refuse this POST (`path` without its query), the fakes' values vouched for."""
    return api_rules.endpoint_problems(path, body, FAKE_SEALS, capabilities)


def request_problems(body: object, capabilities: Json | None = None) -> list[str]:
    """Every reason the API would refuse this /v1/messages body (empty: it would accept it)."""
    return api_rules.request_problems(body, FAKE_SEALS, capabilities)
