"""Charts as inline SVG, drawn when the page is made (no script draws them): bars per item, a histogram."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, BAR, GAP = 420, 14, 4
MAX_BARS = 60  # a chart of more items shows the largest


def bars(title: str, items: Sequence[tuple[str, float]], shown: str) -> str:
    """One horizontal bar per item, labelled, longest first."""
    top = sorted(items, key=lambda item: item[1], reverse=True)[:MAX_BARS]
    peak = max((value for _, value in top), default=0) or 1
    rows: list[str] = []
    for index, (label, value) in enumerate(top):
        y = index * (BAR + GAP) + 20
        width = max(1, int((WIDTH - 150 - 60) * value / peak))  # room for the value's label after the bar
        rows.append(
            f"<text x=0 y={y + BAR - 3} font-size=11>{escape(label[:22])}</text>"
            f"<rect x=150 y={y} width={width} height={BAR} fill='#3b6fd4'><title>{escape(label)}: "
            f"{escape(shown.format(value))}</title></rect>"
            f"<text x={155 + width} y={y + BAR - 3} font-size=10>{escape(shown.format(value))}</text>"
        )
    height = len(top) * (BAR + GAP) + 28
    return _svg(title, height, "".join(rows) or "<text x=0 y=34 font-size=12>nothing yet</text>")


def histogram(title: str, values: Sequence[float], shown: str, buckets: int = 10) -> str:
    """How the values spread: `buckets` equal ranges from the least to the most, a column each; `shown` formats
    a value on the axis and in the columns' titles (`${:.4f}`, `{:.1f} s`): money and seconds, not raw floats."""
    if not values:
        return _svg(title, 60, "<text x=0 y=34 font-size=12>nothing yet</text>")
    low, high = min(values), max(values)
    step = (high - low) / buckets or 1
    counts = [0] * buckets
    for value in values:
        counts[min(buckets - 1, int((value - low) / step))] += 1
    peak, column = max(counts), (WIDTH - 20) // buckets
    cells: list[str] = []
    for index, count in enumerate(counts):
        height = int(120 * count / peak)
        start = low + index * step
        cells.append(
            f"<rect x={10 + index * column} y={150 - height} width={column - 2} height={max(height, 0)} "
            f"fill='#6a9f3b'><title>{escape(shown.format(start))}–{escape(shown.format(start + step))}: "
            f"{count}</title></rect>"
        )
    axis = (
        f"<text x=10 y=166 font-size=10>{escape(shown.format(low))}</text>"
        f"<text x={WIDTH - 10} y=166 font-size=10 text-anchor=end>{escape(shown.format(high))}</text>"
    )
    return _svg(title, 172, "".join(cells) + axis)


def _svg(title: str, height: int, inner: str) -> str:
    return (
        f"<figure><figcaption>{escape(title)}</figcaption><svg xmlns='http://www.w3.org/2000/svg' width={WIDTH} "
        f"height={height} role=img aria-label='{escape(title)}'>{inner}</svg></figure>"
    )
