"""What the Messages API refuses in an image or a PDF, for api_rules.py: the media types it takes, the bytes it
decodes (which must be what the type says), the sizes, and what a tool result may hold. Stdlib only."""

from __future__ import annotations

import base64
from typing import Any, cast

Json = dict[str, Any]

IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
IMAGE_MAX_BASE64_BYTES = 5 * 1024 * 1024  # per image, on the base64 text (the API's own error says so)
IMAGE_MAGIC = {  # the API decodes the image and refuses bytes that contradict the declared type
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
PDF_MAX_BASE64_BYTES = 32 * 1024 * 1024


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        return None


def image_problems(block: Json, where: str) -> list[str]:
    source = block.get("source")
    if not isinstance(source, dict) or cast(Json, source).get("type") != "base64":
        return [f"{where}.source: a base64 source is required"]
    media_type, data = cast(Json, source).get("media_type"), cast(Json, source).get("data")
    problems: list[str] = []
    if media_type not in IMAGE_MEDIA_TYPES:
        allowed = ", ".join(sorted(IMAGE_MEDIA_TYPES))
        problems.append(f"{where}.source.media_type: {media_type!r} is not one of {allowed}")
    if not isinstance(data, str) or not data:
        return [*problems, f"{where}.source.data: non-empty base64 data is required"]
    if len(data) > IMAGE_MAX_BASE64_BYTES:
        return [*problems, f"{where}.source.data: image exceeds 5 MB maximum: {len(data)} bytes > 5242880 bytes"]
    raw = _decoded(data)
    if raw is None:
        return [*problems, f"{where}.source.data: the image data is not valid base64"]
    magic = IMAGE_MAGIC.get(str(media_type), ())
    if magic and not any(raw.startswith(prefix) for prefix in magic):
        problems.append(f"{where}.source: image does not match the provided media type {media_type}")
    return problems


def document_problems(block: Json, where: str, role: str) -> list[str]:
    """A base64 PDF in a user turn: the bytes must be a PDF, within the 32 MB request limit."""
    source = block.get("source")
    problems = [] if role == "user" else [f"{where}: document blocks may only appear in user turns"]
    pdf = cast(Json, source) if isinstance(source, dict) else {}
    if pdf.get("type") != "base64" or pdf.get("media_type") != "application/pdf":
        return [*problems, f"{where}.source: a base64 source with media_type application/pdf is required"]
    data = str(pdf.get("data", ""))
    if len(data) > PDF_MAX_BASE64_BYTES:
        return [*problems, f"{where}: request_too_large: the PDF is over 32 MB"]
    raw = _decoded(data)
    if raw is None:
        return [*problems, f"{where}.source.data: the PDF data is not valid base64"]
    return problems if raw.startswith(b"%PDF-") else [*problems, f"{where}.source: the PDF specified was not valid"]


def result_content_problems(content: object, where: str) -> list[str]:
    if content is None or isinstance(content, str):
        return []  # a string (even empty) or no content is accepted for a tool_result
    if not isinstance(content, list):
        return [f"{where}.content: a string or a list of blocks is required"]
    problems: list[str] = []
    for index, part in enumerate(cast(list[Any], content)):
        inner = f"{where}.content.{index}"
        kind = cast(Json, part).get("type") if isinstance(part, dict) else None
        if kind not in ("text", "image"):
            problems.append(f"{inner}: only text and image blocks are allowed in a tool_result")
        elif kind == "text" and not str(cast(Json, part).get("text", "")).strip():
            problems.append(f"{inner}: text blocks must contain non-whitespace text")
        elif kind == "image":
            problems += image_problems(cast(Json, part), inner)
    return problems
