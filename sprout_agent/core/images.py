"""Which images (and PDFs) the Messages API accepts: checked when a tool result comes in, when a transcript
loads, and when the user attaches a file (`@picture.png`, stream-json and ACP image blocks).

An image the API refuses (a type it does not take, data that is not base64, over its size limits, bytes
that are not the declared type) would fail every later request of the session, because the history
carries it; it becomes a short text note instead. Stdlib only.
"""

from __future__ import annotations

import binascii
import struct

from sprout_agent.core.messages import Image, Text

API_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
PDF = "application/pdf"  # kept as an `Image` block with this type; sent as a `document` block
MAX_BASE64_BYTES = 5 * 1024 * 1024  # the API's per-image limit, measured on the base64 payload
MAX_PDF_BASE64_BYTES = 32 * 1024 * 1024  # the API's request size limit, which the PDF must fit in
ATTACH_MAX_BYTES = MAX_PDF_BASE64_BYTES * 3 // 4  # the most raw bytes an attached file may have
MAX_SIDE_PX = 8000  # the API's per-image dimension limit (2000 px when a request holds more than 20 images)
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # JPEG start-of-frame segments


def checked(image: Image, *, documents: bool = False) -> Image | Text:
    """The image as the API will take it (base64 line breaks removed), or a note saying why it was left out.
    `documents`: a PDF is allowed too (a user's attachment; tool results carry images only)."""
    data = "".join(image.data.split())  # servers may wrap base64 at 76 columns; the API takes it unwrapped
    problem = _pdf_problem(data) if documents and image.media_type == PDF else _problem(image.media_type, data)
    if problem is not None:
        return Text(f"[image omitted: {problem}]")
    return image if data == image.data else Image(image.media_type, data)


def sniff(raw: bytes) -> str | None:
    """The media type the bytes say they are (never the file name's): an image type the API takes, or PDF."""
    if raw.startswith(b"%PDF-"):
        return PDF
    return next((media for media in API_MEDIA_TYPES if _magic_matches(media, raw)), None)


def attachment(raw: bytes, declared: str | None = None) -> Image | str:
    """A user's file as a block to send, or why it cannot be (its type by content; `declared`, when the client
    named one, must agree with the bytes, as the API refuses an image whose bytes contradict its type)."""
    media = sniff(raw)
    if media is None:
        return "not a PNG, JPEG, GIF or WebP image, nor a PDF"
    if declared is not None and declared != media:
        return f"declared {declared or 'without a type'}, but the bytes are {media}"
    data = binascii.b2a_base64(raw, newline=False).decode("ascii")
    problem = _pdf_problem(data) if media == PDF else _problem(media, data)
    return Image(media, data) if problem is None else problem


def _pdf_problem(data: str) -> str | None:
    if len(data) > MAX_PDF_BASE64_BYTES:
        return f"a PDF of {len(data) / 2**20:.1f} MB base64 is over the API's 32 MB request limit"
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return "the PDF data is not valid base64"
    return None if raw.startswith(b"%PDF-") else "the data is not a PDF"


def _problem(media_type: str, data: str) -> str | None:
    if media_type not in API_MEDIA_TYPES:
        return f"{media_type or 'an untyped image'} is not a type the API accepts"
    if len(data) > MAX_BASE64_BYTES:
        return f"{media_type} of {len(data) / 2**20:.1f} MB base64 is over the API's 5 MB limit"
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return f"the {media_type} data is not valid base64"
    if not raw or not _magic_matches(media_type, raw):
        return f"the data does not match its type {media_type}"
    size = _dimensions(media_type, raw)
    if size is not None and max(size) > MAX_SIDE_PX:
        return f"{size[0]}x{size[1]} px {media_type} is over the API's {MAX_SIDE_PX} px limit"
    return None


def _magic_matches(media_type: str, raw: bytes) -> bool:
    """The first bytes say what the image really is; the API refuses one whose bytes contradict its type."""
    if media_type == "image/png":
        return raw.startswith(b"\x89PNG\r\n\x1a\n")
    if media_type == "image/jpeg":
        return raw.startswith(b"\xff\xd8\xff")
    if media_type == "image/gif":
        return raw.startswith((b"GIF87a", b"GIF89a"))
    return raw.startswith(b"RIFF") and raw[8:12] == b"WEBP"


def _dimensions(media_type: str, raw: bytes) -> tuple[int, int] | None:
    """(width, height) from the header when it is there to read; None when it is not (the API decides)."""
    try:
        if media_type == "image/png" and raw[12:16] == b"IHDR":
            return struct.unpack(">II", raw[16:24])
        if media_type == "image/gif":
            return struct.unpack("<HH", raw[6:10])
        if media_type == "image/webp":
            return _webp_dimensions(raw)
        if media_type == "image/jpeg":
            return _jpeg_dimensions(raw)
    except struct.error:
        return None
    return None


def _webp_dimensions(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8X":
        return 1 + int.from_bytes(raw[24:27], "little"), 1 + int.from_bytes(raw[27:30], "little")
    if chunk == b"VP8L":
        bits = int.from_bytes(raw[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", raw[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def _jpeg_dimensions(raw: bytes) -> tuple[int, int] | None:
    """Walks the segments to the first start-of-frame, which holds the height and width."""
    offset = 2
    while offset + 9 <= len(raw) and raw[offset] == 0xFF:
        marker = raw[offset + 1]
        if marker in _SOF_MARKERS:
            height, width = struct.unpack(">HH", raw[offset + 5 : offset + 9])
            return width, height
        (length,) = struct.unpack(">H", raw[offset + 2 : offset + 4])
        offset += 2 + length
    return None
