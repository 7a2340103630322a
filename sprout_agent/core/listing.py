"""A bounded listing for the model: a line per entry (`- name: description`) while they fit, then the rest by name
only, the names bounded too. The skills in the system prompt and the agent types in the task tool's description
come from a repository's files, which may hold hundreds of long ones: each request carries the listing."""

from __future__ import annotations

from collections.abc import Sequence


def bounded_listing(
    lines: list[str],
    entries: Sequence[tuple[str, str]],
    *,
    max_chars: int,
    names_max_chars: int,
    description_max_chars: int | None = None,
) -> str:
    """`lines`, then an entry a line within `max_chars` in all (each description cut at `description_max_chars`),
    then one line naming the rest within `names_max_chars`."""
    used = sum(len(line) + 1 for line in lines)
    for index, (name, description) in enumerate(entries):
        line = f"- {name}: {_cut(description, description_max_chars)}"
        if used + len(line) + 1 > max_chars:
            names = _cut(", ".join(n for n, _ in entries[index:]), names_max_chars)
            lines.append(f"- {len(entries) - index} more, by name only: {names}")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"
