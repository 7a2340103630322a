"""`session/list`: the recorded sessions (session/index.py), newest activity first, a page at a time.

The cursor is opaque to the client: the (activity time, id) of the page's last session, so a session that is
active meanwhile moves to the front without shifting the pages that follow."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import anyio.to_thread

from sprout_agent.faces.acp.wire import INVALID_PARAMS, Json, RpcError
from sprout_agent.session.index import SessionInfo, list_sessions

PAGE_SIZE = 50
_Key = tuple[float, str]  # sorted newest first: a larger time comes first, then the smaller id


async def session_page(directory: Path, params: Json) -> Json:
    cwd, cursor = params.get("cwd"), params.get("cursor")
    if cwd is not None and (not isinstance(cwd, str) or not Path(cwd).is_absolute()):
        raise RpcError(INVALID_PARAMS, "Invalid params: cwd must be an absolute path")
    after = _decode(cursor) if cursor is not None else None
    found = await anyio.to_thread.run_sync(list_sessions, directory, cwd, abandon_on_cancel=True)
    ordered = sorted(found, key=_order)
    if after is not None:
        ordered = [info for info in ordered if _order(info) > _order_of(after)]
    page = ordered[:PAGE_SIZE]
    answer: Json = {"sessions": [_info(info) for info in page]}
    if len(ordered) > PAGE_SIZE:
        answer["nextCursor"] = _encode((page[-1].last_activity, page[-1].session_id))
    return answer


def _info(info: SessionInfo) -> Json:
    updated = datetime.fromtimestamp(info.last_activity, UTC).isoformat().replace("+00:00", "Z")
    entry: Json = {"sessionId": info.session_id, "cwd": info.cwd, "updatedAt": updated}
    if info.first_prompt:
        entry["title"] = info.first_prompt
    return entry


def _order(info: SessionInfo) -> tuple[float, str]:
    return _order_of((info.last_activity, info.session_id))


def _order_of(key: _Key) -> tuple[float, str]:
    return (-key[0], key[1])


def _encode(key: _Key) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode("ascii")


def _decode(cursor: object) -> _Key:
    """A cursor we gave out; anything else is Invalid params."""
    try:
        if not isinstance(cursor, str):
            raise ValueError(cursor)
        key = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        when, session_id = cast(list[object], key)
        if isinstance(when, bool) or not isinstance(when, int | float) or not isinstance(session_id, str):
            raise ValueError(cursor)
        return (float(when), session_id)
    except (ValueError, TypeError, UnicodeError, binascii.Error, RecursionError):
        raise RpcError(INVALID_PARAMS, "Invalid params: cursor is not one this agent gave out") from None
