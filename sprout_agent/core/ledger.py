"""Tokens and cost: a documented price table (overridable with SPROUT_AGENT_PRICES) and running totals."""

from __future__ import annotations

import json
import math
from dataclasses import astuple, dataclass, field

from sprout_agent.core.errors import UsageError
from sprout_agent.core.messages import Usage
from sprout_agent.core.model_names import canonical


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


# By model-name prefix, first match wins (docs/models.md "Cost"). Cache reads bill at 0.1x input, 5-minute
# cache writes at 1.25x input, as Anthropic prices prompt caching.
PRICES: tuple[tuple[str, Price], ...] = (
    ("claude-opus", Price(5.0, 25.0, 0.50, 6.25)),
    ("claude-sonnet", Price(3.0, 15.0, 0.30, 3.75)),
    ("claude-haiku", Price(1.0, 5.0, 0.10, 1.25)),
    ("", Price(3.0, 15.0, 0.30, 3.75)),  # unknown models are priced as Sonnet
)


WEB_SEARCH_USD = 10.0 / 1000  # per search, on top of tokens (web fetch costs only the tokens it adds)


def parse_prices(raw: str | None) -> dict[str, Price]:
    """SPROUT_AGENT_PRICES: `{"model-prefix": [input, output, cache_read, cache_write], …}` in $/MTok."""
    if not raw or not raw.strip():
        return {}
    try:
        data = json.loads(raw)
        prices = {str(prefix): Price(*(float(v) for v in values)) for prefix, values in dict(data).items()}
    except (ValueError, TypeError, RecursionError) as error:  # RecursionError: nested too deeply for json
        raise UsageError(f"SPROUT_AGENT_PRICES must map model prefixes to 4 prices: {error}") from None
    if not all(math.isfinite(v) and v >= 0 for price in prices.values() for v in astuple(price)):
        # NaN would reach the json result as a bare NaN, which is not JSON.
        raise UsageError("SPROUT_AGENT_PRICES must map model prefixes to 4 prices: each a finite number >= 0")
    return prices


def price_for(model: str, overrides: dict[str, Price]) -> Price:
    """The first prefix that `model` or its first-party name (a Bedrock or Vertex id's, model_names.py) starts with."""
    table = [*sorted(overrides.items(), key=lambda item: -len(item[0])), *PRICES]
    name = canonical(model)
    return next(price for prefix, price in table if model.startswith(prefix) or name.startswith(prefix))


@dataclass
class Ledger:
    model: str
    overrides: dict[str, Price] = field(default_factory=dict[str, Price])
    usage: Usage = field(default_factory=Usage)
    requests: int = 0  # responses counted
    cost: float = 0.0
    sent: int = 0  # requests actually sent, failed attempts and retries included (the client reports them)
    earlier: float = 0.0  # a resumed session's spend in its earlier runs: shown, never counted against a budget
    # The subagents' spend, a line each (`add_child`), priced at their own models; already in the totals above.
    children: dict[str, tuple[Usage, float]] = field(default_factory=dict[str, tuple[Usage, float]])
    # A subagent's: the ledger its spend is also counted in, on the line `label`. Its budget bounds that total, so
    # parallel children together stop at the session's budget, not each at what was left when it started.
    counted_in: Ledger | None = None
    label: str = ""

    def budget_spent(self) -> float:
        """What `--max-budget-usd` bounds: the session's spend, a subagent's siblings' included."""
        return self.cost if self.counted_in is None else self.counted_in.budget_spent()

    def attempted(self) -> None:
        self.sent += 1

    def add(self, usage: Usage) -> float:
        """Counts one response; returns what it cost in dollars."""
        price = price_for(self.model, self.overrides)
        cost = (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_read_tokens * price.cache_read
            + usage.cache_write_tokens * price.cache_write
        ) / 1_000_000 + usage.web_searches * WEB_SEARCH_USD
        self.usage += usage
        self.requests += 1
        self.cost += cost
        if self.counted_in is not None:
            self.counted_in.add_child(self.label, usage, cost)
        return cost

    def add_child(self, label: str, usage: Usage, cost: float) -> None:
        """A subagent's response, counted in this session's totals (and budget) and on the child's own line."""
        before_usage, before_cost = self.children.get(label, (Usage(), 0.0))
        self.children[label] = (before_usage + usage, before_cost + cost)
        self.usage += usage
        self.requests += 1
        self.cost += cost
        if self.counted_in is not None:  # a grandchild's: on its parent's line in the session's ledger
            self.counted_in.add_child(self.label, usage, cost)

    def child_lines(self) -> list[str]:
        """One line per subagent: what it spent (already in the totals)."""
        return [
            f"{label}: tokens in {u.input_tokens}, cache read {u.cache_read_tokens}, out {u.output_tokens}; ${cost:.4f}"
            for label, (u, cost) in self.children.items()
        ]

    def summary(self) -> str:
        u = self.usage
        web = f"; web searches {u.web_searches}, fetches {u.web_fetches}" if u.web_searches or u.web_fetches else ""
        session = f" (the session: ${self.earlier + self.cost:.4f})" if self.earlier else ""
        return (
            f"{max(self.sent, self.requests)} requests; tokens in {u.input_tokens}, cache read {u.cache_read_tokens}, "
            f"cache write {u.cache_write_tokens}, out {u.output_tokens}{web}; cost ${self.cost:.4f}{session}"
        )
