"""The batch report's charts read as money and seconds (issue 45: the histograms' axes were raw floats)."""

from __future__ import annotations

import re

from sprout_agent.faces.pages.batch_report import MONEY, SECONDS
from sprout_agent.faces.pages.charts import bars, histogram


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text [^>]*>([^<]*)</text>", svg)


def test_a_histograms_axis_reads_as_money_or_seconds_not_raw_floats() -> None:
    costs = histogram("cost distribution", [0.007515, 0.0123, 0.2], MONEY)
    assert _texts(costs) == ["$0.0075", "$0.2000"]
    assert "<title>$0.0075–$0.0268: 2</title>" in costs
    durations = histogram("duration distribution", [1.25, 61.0], SECONDS)
    assert _texts(durations) == ["1.2 s", "61.0 s"]


def test_bars_show_each_value_in_its_unit() -> None:
    assert _texts(bars("cost per task", [("a", 0.5), ("b", 0.0123)], MONEY)) == ["a", "$0.5000", "b", "$0.0123"]
