"""What one model can do: its window, output cap, thinking types and effort levels, from the Models API.

The entry (`GET /v1/models/{id}`) is cached on disk for a day, keyed by model and base URL, so a warm start
sends nothing before the first request. Offline, or behind a proxy without `/v1/models`: a built-in table,
then the 200k default. From these facts, and the user's `--thinking`/`--effort`, come the request options.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sprout_agent.config.settings import EFFORT_LEVELS
from sprout_agent.core.model_names import canonical

CACHE_SECONDS = 24 * 3600
DEFAULT_WINDOW = 200_000
MIN_THINKING_BUDGET = 1024  # the API's floor for `budget_tokens`

# Longest prefix first. Only what Anthropic's model pages state; the Models API is the real source.
_TABLE: tuple[tuple[str, int, int], ...] = (
    ("claude-opus-4-1", 200_000, 32_000),
    ("claude-opus-4-0", 200_000, 32_000),
    ("claude-opus-4-5", 200_000, 64_000),
    ("claude-sonnet-4-5", 200_000, 64_000),
    ("claude-haiku-4-5", 200_000, 64_000),
    ("claude-3-5-haiku", 200_000, 8_192),
)

# Models whose structured outputs (strict tool schemas) Anthropic's structured-outputs page lists, for when the
# Models API cannot say; any other model gets no `strict` from the table (a refusal would fail every request).
_STRUCTURED_OUTPUTS = (
    "claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-5", "claude-sonnet-4-6",
    "claude-haiku-4-5", "claude-mythos",
)  # fmt: skip

Fetch = Callable[[], "Mapping[str, Any] | None"]  # the model's entry, None = the API has no such entry (404)


class Unreachable(Exception):
    """The Models API could not be asked (offline, timeout): nothing is cached, the table is used."""


@dataclass(frozen=True, slots=True)
class ModelFacts:
    model: str
    window: int
    max_output: int | None  # the model's cap for `max_tokens`; None = unknown
    thinking_types: frozenset[str] | None  # adaptive / enabled / disabled / between_tools; None = unknown
    effort_levels: frozenset[str] | None  # empty = no effort parameter; None = unknown
    source: str  # "Models API", "cache", "built-in table", "default"
    image_input: bool | None = None  # None = unknown (no Models API entry): the API decides
    pdf_input: bool | None = None
    web_search: bool | None = None  # capabilities.server_tools.web_search (web fetch has no flag of its own)
    structured_outputs: bool | None = None  # capabilities.structured_outputs: strict tool schemas

    def describe(self) -> str:
        cap = f", output cap {self.max_output}" if self.max_output else ""
        return f"model facts for {self.model} from the {self.source}: window {self.window}{cap}"


def from_info(model: str, info: Mapping[str, Any], source: str) -> ModelFacts:
    """Reads a `ModelInfo` as JSON; a missing capability stays unknown rather than guessed."""
    caps = _dict(info.get("capabilities"))
    thinking = _dict(caps.get("thinking"))
    types = _dict(thinking.get("types"))
    effort = _dict(caps.get("effort"))
    levels = frozenset(name for name in EFFORT_LEVELS if _dict(effort.get(name)).get("supported") is True)
    window = info.get("max_input_tokens")
    max_output = info.get("max_tokens")
    return ModelFacts(
        model,
        window if isinstance(window, int) and window > 0 else fallback(model).window,
        max_output if isinstance(max_output, int) and max_output > 0 else fallback(model).max_output,
        frozenset(name for name, value in types.items() if _dict(value).get("supported") is True) if types else None,
        (levels if effort.get("supported") is True else frozenset()) if effort else None,
        source,
        _supported(caps.get("image_input")),
        _supported(caps.get("pdf_input")),
        _supported(_dict(caps.get("server_tools")).get("web_search")) if "server_tools" in caps else None,
        _supported(caps.get("structured_outputs")),
    )


def _supported(value: object) -> bool | None:
    return None if not isinstance(value, dict) else cast(dict[str, Any], value).get("supported") is True


def fallback(model: str) -> ModelFacts:
    """The table's facts, found by the first-party name (a Bedrock or Vertex id is its model's: model_names.py)."""
    name = canonical(model)
    structured = name.startswith(_STRUCTURED_OUTPUTS) or None
    for prefix, window, max_output in _TABLE:
        if name.startswith(prefix):
            return ModelFacts(model, window, max_output, None, None, "built-in table", structured_outputs=structured)
    return ModelFacts(model, DEFAULT_WINDOW, None, None, None, "default", structured_outputs=structured)


def resolve(
    model: str, base_url: str | None, cache_dir: Path | None, fetch: Fetch, now: float | None = None
) -> ModelFacts:
    """The cached entry when fresh; else asks (`fetch`) and caches the answer, a 404 included."""
    now = time.time() if now is None else now
    path = cache_dir / f"{cache_key(model, base_url)}.json" if cache_dir is not None else None
    cached = _read(path, now)
    if cached is not None:
        info = cached.get("info")
        return from_info(model, cast(dict[str, Any], info), "cache") if isinstance(info, dict) else fallback(model)
    try:
        info = fetch()
    except Unreachable:
        return fallback(model)
    _write(path, {"fetched_at": now, "model": model, "base_url": base_url or "", "info": info})
    return from_info(model, info, "Models API") if info is not None else fallback(model)


def cache_key(model: str, base_url: str | None) -> str:
    return hashlib.sha256(f"{base_url or ''}\n{model}".encode()).hexdigest()[:24]


def _read(path: Path | None, now: float) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    entry = cast(dict[str, Any], data)
    fetched = entry.get("fetched_at")
    if not isinstance(fetched, int | float) or not 0 <= now - fetched < CACHE_SECONDS:
        return None
    return entry


def _write(path: Path | None, entry: dict[str, Any]) -> None:
    """Atomically, and never fatal: a read-only cache directory only costs the next start a request."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entry), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def _dict(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


# --- request options ----------------------------------------------------------------------------------
def thinking_param(setting: str | None, facts: ModelFacts, max_tokens: int, budget: int) -> dict[str, Any] | None:
    """The `thinking` object for a request, or None to leave it out (the model's own default).

    Default (no setting): adaptive where the model lists it, else a budget where it lists `enabled`, else
    nothing. `on` prefers a budget; `adaptive` falls back to a budget; `off` sends `disabled` where valid.
    """
    types = facts.thinking_types
    if setting == "off":
        return {"type": "disabled"} if types is None or "disabled" in types else None
    budgeted = _budgeted(max_tokens, budget)
    adaptive: dict[str, Any] = {"type": "adaptive"}
    if setting is None:
        if types is None:
            return None
        return adaptive if "adaptive" in types else budgeted if "enabled" in types else None
    if setting == "on" and (types is None or "enabled" in types) and budgeted is not None:
        return budgeted
    if types is None or "adaptive" in types:
        return adaptive
    return budgeted if "enabled" in types else None


def _budgeted(max_tokens: int, budget: int) -> dict[str, Any] | None:
    tokens = min(budget, max_tokens // 2)  # below max_tokens, as the API wants, and room left for the answer
    return {"type": "enabled", "budget_tokens": tokens} if tokens >= MIN_THINKING_BUDGET else None


def effort_param(level: str | None, facts: ModelFacts) -> str | None:
    """The effort level to send, or None when unset or the model does not list it (the API would refuse)."""
    if level is None or (facts.effort_levels is not None and level not in facts.effort_levels):
        return None
    return level


def adjusted(thinking: str | None, effort: str | None, facts: ModelFacts) -> tuple[str | None, str | None, list[str]]:
    """The settings that still apply after a switch to the model of `facts`, and a line for each one dropped.

    Thinking asked for (adaptive/on) on a model that lists neither type goes back to the model's default; an
    effort level it does not list is dropped (the API would refuse both). Unknown capabilities keep them."""
    notes: list[str] = []
    types = facts.thinking_types
    if thinking in ("adaptive", "on") and types is not None and not types & {"adaptive", "enabled"}:
        notes.append(f"{facts.model} does not support thinking: thinking {thinking} is off for it")
        thinking = None
    levels = facts.effort_levels
    if effort is not None and levels is not None and effort not in levels:
        listed = ", ".join(level for level in EFFORT_LEVELS if level in levels) or "none"
        notes.append(f"{facts.model} does not list effort {effort} (it lists: {listed}): effort is its default")
        effort = None
    return thinking, effort, notes
