"""Whether a request is the recorded one: both put in a comparable form without the volatile fields that
docs/cassettes.md lists, and the first difference as a path and both values. Stdlib only."""

from __future__ import annotations

import json
import re
from typing import Any, cast

from sprout_agent.model.cassettes.format import Json

# The system prompt's lines that change with the day and the machine, not with the session (model/system_prompt.py).
_DATE = re.compile(r"^Date: \d{4}-\d{2}-\d{2}$", re.MULTILINE)
_PLATFORM = re.compile(r"^Platform: .*$", re.MULTILINE)
_IDS = ("id", "tool_use_id")  # tool call ids: compared by which call they name, not by their text
VALUE_CHARS = 160  # a value in a difference is cut here


def comparable(request: Json, cwd: str) -> Json:
    """What strict replay compares: method, path, the beta header and the body, with cache markers left out, the
    working directory, date and platform as placeholders and tool call ids numbered by first appearance."""
    ids: dict[str, str] = {}

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            items = cast(Json, value).items()
            return {k: walk(v, k) for k, v in items if k != "cache_control"}
        if isinstance(value, list):
            return [walk(v) for v in cast(list[Any], value)]
        if isinstance(value, str):
            if key in _IDS:
                return ids.setdefault(value, f"<id {len(ids) + 1}>")
            text = value.replace(cwd, "<cwd>") if len(cwd) > 1 else value  # never "/"
            return _PLATFORM.sub("Platform: <platform>", _DATE.sub("Date: <date>", text))
        return value

    headers = cast(Json, request.get("headers") or {})
    return {
        "method": request.get("method"),
        "path": request.get("path"),
        "anthropic-beta": headers.get("anthropic-beta"),
        "body": walk(request.get("body")),
    }


_MISSING = object()


def first_difference(recorded: object, sent: object, path: str = "") -> tuple[str, object, object] | None:
    """(path, recorded value, sent value) of the first place they differ, depth first; None when equal. A value
    one side lacks is `_MISSING` (shown as "nothing")."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        old, new = cast(Json, recorded), cast(Json, sent)
        for key in [*old, *(k for k in new if k not in old)]:
            found = first_difference(old.get(key, _MISSING), new.get(key, _MISSING), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        old_list, new_list = cast(list[Any], recorded), cast(list[Any], sent)
        for index in range(max(len(old_list), len(new_list))):
            a = old_list[index] if index < len(old_list) else _MISSING
            b = new_list[index] if index < len(new_list) else _MISSING
            found = first_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if recorded == sent:
        return None
    return (path or "(the request)", cast(object, recorded), sent)


def shown(value: Any) -> str:
    """A value of a difference, as JSON cut to VALUE_CHARS."""
    if value is _MISSING:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def difference_text(recorded: Json, sent: Json) -> str:
    found = first_difference(recorded, sent)
    if found is None:
        return "no difference"
    path, old, new = found
    return f"{path}: recorded {shown(old)}, sent {shown(new)}"
