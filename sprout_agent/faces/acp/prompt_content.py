"""A `session/prompt`'s content blocks as our prompt: text, links and embedded text as one text; images (and
image or PDF blobs) as attachments, their bytes checked as the API checks them. Every refusal is -32602."""

from __future__ import annotations

import binascii
import os
import re
from typing import cast

from sprout_agent.config.settings import DEFAULT_MODEL
from sprout_agent.core.images import MAX_PDF_BASE64_BYTES, attachment
from sprout_agent.core.messages import Image
from sprout_agent.faces.acp.session_template import AcpSetup
from sprout_agent.faces.acp.wire import INVALID_PARAMS, Json, RpcError
from sprout_agent.model import facts as model_facts

MAX_PROMPT_BYTES = 1024 * 1024
MAX_ATTACHMENTS = 20  # the API lowers its image size limit past 20 images a request
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def prompt_content(raw: object) -> tuple[str, tuple[Image, ...]]:
    if not isinstance(raw, list) or not raw:
        raise RpcError(INVALID_PARAMS, "Invalid params: prompt must be a non-empty array of content blocks")
    parts: list[str] = []
    images: list[Image] = []
    for index, block in enumerate(cast(list[object], raw)):
        item = cast(Json, block) if isinstance(block, dict) else {}
        attached = _attached(item, index)
        if attached is not None:
            images.append(attached)
        else:
            parts.append(_block_text(item))
    if len(images) > MAX_ATTACHMENTS:
        raise RpcError(INVALID_PARAMS, f"Invalid params: more than {MAX_ATTACHMENTS} images in one prompt")
    text = _LONE_SURROGATE.sub("\ufffd", "".join(parts))  # a "\ud800" escape cannot reach the model or the store
    if len(text.encode()) > MAX_PROMPT_BYTES:
        raise RpcError(INVALID_PARAMS, f"Invalid params: the prompt is larger than {MAX_PROMPT_BYTES} bytes")
    if not text.strip() and not images:
        raise RpcError(INVALID_PARAMS, "Invalid params: the prompt is empty")
    return text, tuple(images)


def _attached(item: Json, index: int) -> Image | None:
    """An image block, or an embedded blob that is an image or a PDF; None for every other block."""
    resource = item.get("resource")
    if item.get("type") == "image":
        data, declared = item.get("data"), item.get("mimeType")
    elif item.get("type") == "resource" and isinstance(resource, dict) and "blob" in resource:
        data, declared = cast(Json, resource).get("blob"), cast(Json, resource).get("mimeType")
    else:
        return None
    where = f"Invalid params: prompt.{index}"
    if not isinstance(data, str) or len(data) > MAX_PDF_BASE64_BYTES:
        raise RpcError(INVALID_PARAMS, f"{where}: base64 data of at most 32 MB is required")
    try:
        raw = binascii.a2b_base64("".join(data.split()), strict_mode=True)
    except (binascii.Error, ValueError):
        raise RpcError(INVALID_PARAMS, f"{where}: the data is not valid base64") from None
    checked = attachment(raw, declared if isinstance(declared, str) else None)
    if isinstance(checked, str):
        if item.get("type") == "resource":
            return None  # another kind of blob: described as context, as before
        raise RpcError(INVALID_PARAMS, f"{where}: {checked}")
    return checked


def _block_text(item: Json) -> str:
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        return cast(str, item["text"])
    if kind == "resource_link" and isinstance(item.get("uri"), str):
        return f"[{item.get('name') or item['uri']}]({item['uri']})"
    resource = item.get("resource")
    if kind == "resource" and isinstance(resource, dict):
        embedded = cast(Json, resource)
        uri, text = embedded.get("uri", ""), embedded.get("text")
        body = text if isinstance(text, str) else "(binary content not included)"
        return f'\n<context uri="{uri}">\n{body}\n</context>\n'
    raise RpcError(INVALID_PARAMS, f"Invalid params: unsupported content block {kind!r} (text, images, resources)")


def image_input(options: AcpSetup) -> bool:
    """Whether to advertise image prompts: unless the model's cached facts say it takes none. Never fetches
    (initialize answers at once); unknown is yes, as every current Claude model takes images."""
    model = options.template.model or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL
    cache = options.locations.cache / "models" if options.locations.cache is not None else None

    def cache_only() -> None:
        raise model_facts.Unreachable("not fetched at initialize")

    facts = model_facts.resolve(model, os.environ.get("ANTHROPIC_BASE_URL") or None, cache, cache_only)
    return facts.image_input is not False
