"""How a tool call looks in an editor: a human title, an ACP `kind`, file locations, diff content, and
plan entries from the todo server's `todo_write`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import cast

from sprout_agent.faces.acp.wire import Json

DEV, TODO = "dev", "todo"  # the built-in servers (sprout_agent/tools/)
_DEV_KINDS = {"read": "read", "write": "edit", "edit": "edit", "glob": "search", "grep": "search", "bash": "execute"}
_WORD_KINDS = (("fetch", "fetch"), ("search", "search"), ("grep", "search"), ("find", "search"), ("read", "read"))
PRIORITY = "medium"  # todo items carry no priority; ACP requires one


@dataclass(frozen=True, slots=True)
class ToolView:
    title: str
    kind: str
    locations: list[Json]


def describe(server: str, tool: str, arguments: dict[str, object], cwd: str) -> ToolView:
    if server == DEV and tool in _DEV_KINDS:
        return ToolView(_dev_title(tool, arguments, cwd), _DEV_KINDS[tool], _locations(tool, arguments, cwd))
    if server == TODO:
        return ToolView("Update the plan" if tool == "todo_write" else "Read the plan", "think", [])
    return ToolView(f"{server}: {tool}{_summary(arguments)}", _guess_kind(tool), [])


def _dev_title(tool: str, arguments: dict[str, object], cwd: str) -> str:
    if tool == "bash":
        return _text(arguments.get("command")) or "bash"
    if tool in ("glob", "grep"):
        where = _text(arguments.get("path"))
        return f"{'Find' if tool == 'glob' else 'Search'} {_text(arguments.get('pattern'))}" + (
            f" in {_relative(where, cwd)}" if where else ""
        )
    return f"{tool.capitalize()} {_relative(_text(arguments.get('file_path')), cwd)}"


def _locations(tool: str, arguments: dict[str, object], cwd: str) -> list[Json]:
    path = _text(arguments.get("file_path") if tool in ("read", "write", "edit") else arguments.get("path"))
    if not path:
        return []
    location: Json = {"path": absolute(path, cwd)}
    offset = arguments.get("offset")
    if tool == "read" and isinstance(offset, int) and not isinstance(offset, bool) and offset > 0:
        location["line"] = offset
    return [location]


def diff_content(server: str, tool: str, arguments: dict[str, object], cwd: str) -> list[Json]:
    """ACP `diff` content for the dev server's write and edit (old text null for a whole-file write)."""
    if server != DEV or tool not in ("write", "edit"):
        return []
    path = _text(arguments.get("file_path"))
    if not path:
        return []
    if tool == "write":
        return [
            {"type": "diff", "path": absolute(path, cwd), "oldText": None, "newText": _text(arguments.get("content"))}
        ]
    old, new = _text(arguments.get("old_string")), _text(arguments.get("new_string"))
    return [{"type": "diff", "path": absolute(path, cwd), "oldText": old, "newText": new}]


def plan_entries(server: str, tool: str, arguments: dict[str, object]) -> list[Json] | None:
    """The whole plan from a `todo_write` call (ACP replaces the plan on every update); None otherwise."""
    todos = arguments.get("todos")
    if server != TODO or tool != "todo_write" or not isinstance(todos, list):
        return None
    entries: list[Json] = []
    for raw in cast(list[object], todos):
        if isinstance(raw, dict):
            item = cast(dict[str, object], raw)
            status = item.get("status")
            entries.append(
                {
                    "content": _text(item.get("content")),
                    "priority": PRIORITY,
                    "status": status if status in ("pending", "in_progress", "completed") else "pending",
                }
            )
    return entries


def absolute(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def _relative(path: str, cwd: str) -> str:
    if not path:
        return "(no path)"
    full = absolute(path, cwd)
    inside = full == cwd or full.startswith(cwd.rstrip(os.sep) + os.sep)
    return os.path.relpath(full, cwd) if inside else full


def _guess_kind(tool: str) -> str:
    lowered = tool.lower()
    for word, kind in _WORD_KINDS:
        if word in lowered:
            return kind
    return "other"


def _summary(arguments: dict[str, object]) -> str:
    if not arguments:
        return ""
    shown = json.dumps(arguments, ensure_ascii=False, separators=(", ", ": "))
    return f" {shown[:77]}…" if len(shown) > 80 else f" {shown}"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
