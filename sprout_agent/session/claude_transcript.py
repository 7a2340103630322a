"""Our transcript in Claude Code's session format, where a harness written for Claude Code looks for one:
`$CLAUDE_CONFIG_DIR/projects/<cwd as a slug>/<session id>.jsonl` (Harbor's claude-code agent turns it into an ATIF
trajectory with tokens per step). Rewritten whole after each turn; only when CLAUDE_CONFIG_DIR is set."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from sprout_agent import __version__
from sprout_agent.batch.private import PrivateDir
from sprout_agent.session.recorded import Json, Recorded, Said, iso, read

CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"


def slug(cwd: str) -> str:
    """Claude Code's name for a project's directory under `projects/`: every other character than a letter, a
    digit or `-` made `-` (`/app` is `-app`)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", cwd)


def mirror(transcript: Path, environ: Mapping[str, str]) -> Path | None:
    """Writes the Claude Code form of `transcript` under CLAUDE_CONFIG_DIR (the real environment's: a project's
    `.env` never sets it) and returns its path; None when the variable is unset. Raises OSError when the directory
    cannot be used (batch/private.py refuses one another user could steer)."""
    config_dir = environ.get(CONFIG_DIR_ENV, "").strip()
    if not config_dir:
        return None
    recorded = read(transcript)
    with (
        PrivateDir.open(Path(config_dir)) as top,
        top.sub("projects") as projects,
        projects.sub(slug(recorded.cwd or "-")) as project,
    ):
        name = f"{recorded.session_id}.jsonl"
        project.write(name, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines(recorded)))
        return project.path / name


def lines(recorded: Recorded) -> list[Json]:
    """Each recorded message as a session line (user, assistant), chained by `parentUuid`; uuids are derived
    from the session id and the line's place, so a rewrite after the next turn keeps them."""
    out: list[Json] = []
    parent: str | None = None
    for n, said in enumerate(recorded.said):
        line_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"sprout-agent:{recorded.session_id}:{n}"))
        out.append(
            {
                "type": said.role,
                "message": _message(said, recorded.model),
                "uuid": line_id,
                "parentUuid": parent,
                "sessionId": recorded.session_id,
                "timestamp": iso(said.time if said.time is not None else recorded.created),
                "cwd": recorded.cwd,
                "version": __version__,
                "isSidechain": False,
                "userType": "external",
            }
        )
        parent = line_id
    return out


def _message(said: Said, model: str) -> Json:
    content = [api_block(block) for block in said.content]
    if said.role == "user":
        return {"role": "user", "content": content}
    reply = said.reply
    message: Json = {
        "id": reply.message_id if reply is not None and reply.message_id else None,
        "type": "message",
        "role": "assistant",
        "model": reply.model if reply is not None and reply.model else model,
        "content": content,
    }
    if reply is not None:
        message |= {"stop_reason": reply.stop_reason or None, "usage": reply.usage}
    return message


def api_block(block: Json) -> Json:
    """A block in the store's encoding (session/store.py) as the Messages API writes it."""
    kind = block.get("type")
    if kind == "image":
        source = {"type": "base64", "media_type": block.get("media_type"), "data": block.get("data")}
        return {"type": "image", "source": source}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.get("thinking", ""), "signature": block.get("signature", "")}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data", "")}
    if kind == "tool_result":
        parts: object = block.get("content")
        listed = cast(list[object], parts) if isinstance(parts, list) else []
        content = [api_block(cast(Json, p)) for p in listed if isinstance(p, dict)]
        return {"type": "tool_result", "tool_use_id": block.get("tool_use_id"), "content": content} | (
            {"is_error": True} if block.get("is_error") else {}
        )
    return {k: v for k, v in block.items() if k != "model"}
