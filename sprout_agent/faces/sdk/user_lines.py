"""The input side of `--input-format stream-json`: one stdin line as the user's text and attachments, checked as
the API checks them (the control protocol reads them, control.py; `-p` with stream-json input too)."""

from __future__ import annotations

import binascii
import json
from typing import Any, cast

from sprout_agent.core.images import MAX_PDF_BASE64_BYTES, attachment
from sprout_agent.core.messages import Image


def parse_user_line(line: str | bytes) -> str:
    """One stdin line of `--input-format stream-json` → the user's text; ValueError says what is wrong."""
    return parse_user_message(line)[0]


def parse_user_message(line: str | bytes) -> tuple[str, tuple[Image, ...]]:
    """One stdin line → the user's text and attached images/PDFs; ValueError says what is wrong.

    Accepts Claude Code's `{"type": "user", "message": {"role": "user", "content": "…" | [blocks]}}` (text,
    image and document blocks with a base64 source, checked as the API checks them) and the shorter
    `{"type": "user", "text": "…"}`.
    """
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"not UTF-8 text (byte {error.start} is 0x{line[error.start]:02x})") from None
    try:
        data = json.loads(line)
    except ValueError as error:
        raise ValueError(f"not JSON: {error}") from None
    except RecursionError:  # json's parser recurses per `[` or `{`
        raise ValueError("not JSON: nested too deeply") from None
    if not isinstance(data, dict) or cast(dict[str, Any], data).get("type") != "user":
        raise ValueError('expected an object with "type": "user"')
    record = cast(dict[str, Any], data)
    images: tuple[Image, ...] = ()
    if isinstance(record.get("text"), str):
        text: str = record["text"]
    else:
        message = record.get("message")
        if not isinstance(message, dict):
            raise ValueError('expected "text" or "message"')
        text, images = _content(cast(dict[str, Any], message).get("content"))
    if not text.strip() and not images:
        raise ValueError("the user message is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a \ud800 escape: neither the API nor the transcript can carry it
        raise ValueError("the user message is not valid Unicode (a lone surrogate)") from None
    return text, images


def _content(content: object) -> tuple[str, tuple[Image, ...]]:
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise ValueError('"message.content" must be a string or a list of text, image and document blocks')
    parts: list[str] = []
    images: list[Image] = []
    for index, item in enumerate(cast(list[object], content)):
        block = cast(dict[str, Any], item) if isinstance(item, dict) else {}
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind in ("image", "document"):
            images.append(_attached(block, f"message.content.{index}"))
        else:
            raise ValueError("only text, image and document blocks are supported in message.content")
    return "\n".join(parts), tuple(images)


def _attached(block: dict[str, Any], where: str) -> Image:
    """An image or document block with a base64 source, its bytes checked against the declared type."""
    raw_source = block.get("source")
    source = cast(dict[str, Any], raw_source) if isinstance(raw_source, dict) else {}
    data, declared = source.get("data"), source.get("media_type")
    if source.get("type") != "base64" or not isinstance(data, str) or not isinstance(declared, str):
        raise ValueError(f"{where}: a base64 source with media_type and data is required")
    if len(data) > MAX_PDF_BASE64_BYTES:
        raise ValueError(f"{where}: over the API's 32 MB request limit")
    try:
        raw = binascii.a2b_base64("".join(data.split()), strict_mode=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}: the data is not valid base64") from None
    checked = attachment(raw, declared)
    if isinstance(checked, str):
        raise ValueError(f"{where}: {checked}")
    return checked
