"""The todo server's `todo_write` arguments as checklist lines (☐ pending, ◐ in progress, ☑ done), without rich."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}
TODO_WRITE = ("todo", "todo_write")  # (server, tool) of the built-in todo server's writer


@dataclass(frozen=True, slots=True)
class Entry:
    mark: str
    content: str
    status: str


def checklist(arguments: Mapping[str, object]) -> list[Entry] | None:
    """The list the call set, or None when the arguments are not a todo list (the call was refused for it)."""
    todos = arguments.get("todos")
    if not isinstance(todos, list):
        return None
    entries: list[Entry] = []
    for item in todos:  # pyright: ignore[reportUnknownVariableType] - model-made JSON, checked below
        if not isinstance(item, dict):
            return None
        content, status = item.get("content"), item.get("status")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(content, str) or status not in MARKS:
            return None
        entries.append(Entry(MARKS[str(status)], " ".join(content.split()), str(status)))  # pyright: ignore[reportUnknownArgumentType]
    return entries
