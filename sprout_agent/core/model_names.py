"""A model id as each provider spells it, back to the first-party name the price and window tables are keyed by."""

from __future__ import annotations

import re

# `us.anthropic.` / `global.anthropic.` / `anthropic.` (Bedrock's inference profiles and base ids); an ARN's last part.
_BEDROCK_PREFIX = re.compile(r"^(?:[a-z]{2,6}(?:-gov)?\.)?anthropic\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")  # `-v1:0`, `-v1`
_VERTEX_DATE = re.compile(r"@(\d{8})$")  # `claude-sonnet-4-5@20250929`


def canonical(model: str) -> str:
    """`us.anthropic.claude-sonnet-4-5-20250929-v1:0` and `claude-sonnet-4-5@20250929` → `claude-sonnet-4-5-20250929`;
    a first-party id (or one we do not know the shape of) comes back unchanged."""
    name = model.rsplit("/", 1)[-1] if model.startswith("arn:") else model
    if _BEDROCK_PREFIX.match(name):
        name = _BEDROCK_VERSION.sub("", _BEDROCK_PREFIX.sub("", name))
    return _VERTEX_DATE.sub(r"-\1", name)
