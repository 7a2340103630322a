"""`@path` mentions in an interactive prompt: the files they attach (bounded) and the Tab candidates for them.

Allowed: a regular UTF-8 text file inside the working directory (symlinks resolved; nothing under `.git`).
Each attached file follows the prompt as `<file path="…">…</file>` (docs/interactive.md "Mentions"); an image
(PNG, JPEG, GIF, WebP) or a PDF, known by its bytes and not its name, goes as an image or document block
instead. What is not attached (missing, other binary, outside, a directory, too big) gets a note and the
mention stays text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sprout_agent.core.images import ATTACH_MAX_BYTES, attachment, sniff
from sprout_agent.core.mentions import TRAILING
from sprout_agent.core.messages import Image
from sprout_agent.trust.opening import Reader, Refused
from sprout_agent.trust.untrusted import printable

FILE_MAX_BYTES = 256 * 1024
MAX_FILES = 10  # mentions attached per prompt; the rest get a note
LISTING_MAX = 200  # Tab candidates per directory read

# `@` at the start or after whitespace; the path runs to the next whitespace.
_MENTION = re.compile(r"(?:(?<=\s)|^)@(\S+)")


@dataclass(frozen=True, slots=True)
class Attached:
    text: str  # what the model gets: the prompt, then each file
    notes: tuple[str, ...]  # for the user: what was clipped or not attached, and why
    images: tuple[Image, ...] = ()  # attached images and PDFs, checked as the API checks them


def mentions(prompt: str) -> list[str]:
    return [match.group(1) for match in _MENTION.finditer(prompt)]


_ATTACHED = re.compile(r'\n*<file path="[^"\n]*">\n.*?</file>', re.DOTALL)


def without_attachments(text: str) -> str:
    """A prompt without the files its `@` mentions attached (the mentions themselves stay): a replay shows what
    was typed."""
    return _ATTACHED.sub("", text)


def attach_mentions(prompt: str, cwd: Path, skip: Collection[str] = ()) -> Attached:
    """The prompt with every mentioned file appended; notes say what was clipped or skipped.

    Mentions in `skip` (a server's `server:uri` resources, attached by the REPL) are no files."""
    root = cwd.resolve()
    parts: list[str] = []
    notes: list[str] = []
    images: list[Image] = []
    seen: set[Path] = set()
    for raw in mentions(prompt):
        if raw in skip or raw.rstrip(TRAILING) in skip:
            continue
        name, path, problem = _resolve(raw, root)
        if path in seen:
            continue
        if problem is None and len(seen) >= MAX_FILES:
            problem = f"more than {MAX_FILES} files mentioned"
        if problem is not None or path is None:
            notes.append(f"@{name}: not attached ({problem})")
            continue
        seen.add(path)
        if _binary_kind(path) is not None:
            block, note = _read_binary(path, name)
            images += [block] if block is not None else []
            notes += [note] if note is not None else []
            continue
        body, note = _read(path, name)
        if note is not None:
            notes.append(note)
        if body is not None:
            parts.append(
                f'<file path="{name}">\n{body if body.endswith(chr(10)) or not body else body + chr(10)}</file>'
            )
    text = prompt if not parts else prompt + "\n\n" + "\n\n".join(parts)
    return Attached(text, tuple(notes), tuple(images))


def _open(path: Path) -> BinaryIO:
    """The one reader's open: a regular file along its path, never a link swapped in nor a FIFO that would hold the
    prompt (Refused, or OSError)."""
    return Reader().open_file(str(path))


def _why(error: OSError | Refused) -> str:
    return str(error) if isinstance(error, Refused) else error.strerror or "unreadable"


def _binary_kind(path: Path) -> str | None:
    """An image or PDF type by the file's first bytes; None for anything else (read as text)."""
    try:
        with _open(path) as file:
            return sniff(file.read(32))
    except (OSError, Refused):
        return None


def _read_binary(path: Path, name: str) -> tuple[Image | None, str | None]:
    try:
        with _open(path) as file:
            raw = file.read(ATTACH_MAX_BYTES + 1)
    except (OSError, Refused) as error:
        return None, f"@{name}: not attached ({_why(error)})"
    if len(raw) > ATTACH_MAX_BYTES:
        return None, f"@{name}: not attached (over {ATTACH_MAX_BYTES // 2**20} MB)"
    block = attachment(raw)
    if isinstance(block, str):
        return None, f"@{name}: not attached ({block})"
    kind = "PDF" if block.media_type == "application/pdf" else block.media_type
    return block, f"@{printable(name)}: attached as {kind} ({len(raw) // 1024} KiB)"


def _resolve(raw: str, root: Path) -> tuple[str, Path | None, str | None]:
    """(the name as written, the file, why it cannot be attached); trailing punctuation is tried without."""
    candidates = [raw] + ([raw.rstrip(TRAILING)] if raw.rstrip(TRAILING) not in ("", raw) else [])
    for name in reversed(candidates):  # the shorter name first: "see @a.py." means a.py
        path = (root / name).resolve()
        if path.is_file():
            break
    else:
        name = candidates[-1]
        path = (root / name).resolve()
    if not path.is_relative_to(root):
        return name, None, "outside the working directory"
    if ".git" in path.relative_to(root).parts:
        return name, None, "inside .git"
    if path.is_dir():
        return name, None, "a directory"
    if not path.is_file():
        return name, None, "no such file"
    return name, path, None


def _read(path: Path, name: str) -> tuple[str | None, str | None]:
    try:
        with _open(path) as file:
            data = file.read(FILE_MAX_BYTES + 1)
            size = os.fstat(file.fileno()).st_size
    except (OSError, Refused) as error:
        return None, f"@{name}: not attached ({_why(error)})"
    clipped = len(data) > FILE_MAX_BYTES
    data = data[:FILE_MAX_BYTES]
    if b"\0" in data:
        return None, f"@{name}: not attached (binary)"
    text = data.decode("utf-8", errors="ignore" if clipped else "strict") if _utf8(data, clipped) else None
    if text is None:
        return None, f"@{name}: not attached (not UTF-8 text)"
    if clipped:
        marker = f"[clipped: the first {FILE_MAX_BYTES // 1024} KiB of {size} bytes]"
        return f"{text}\n{marker}", f"@{name}: clipped to its first {FILE_MAX_BYTES // 1024} KiB"
    return text, None


def _utf8(data: bytes, clipped: bool) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return clipped and error.start >= len(data) - 3  # a character cut at the clip is fine
    return True


def file_candidates(partial: str, cwd: Path) -> list[str]:
    """Tab after `@partial`: entries of partial's directory (relative to cwd) starting with its last part;
    directories end in `/`; `.git` and names starting with `.` (unless typed) are left out; bounded."""
    directory, _, stem = partial.rpartition("/")
    root = cwd.resolve()
    base = (root / directory).resolve() if directory else root
    if not base.is_relative_to(root) or not base.is_dir():
        return []
    found: list[str] = []
    try:
        with os.scandir(base) as entries:
            for entry in entries:
                if len(found) >= LISTING_MAX:
                    break
                if entry.name == ".git" or not entry.name.startswith(stem):
                    continue
                if entry.name.startswith(".") and not stem.startswith("."):
                    continue
                suffix = "/" if entry.is_dir() else ""
                found.append(f"{directory + '/' if directory else ''}{entry.name}{suffix}")
    except OSError:
        return []
    return sorted(found)


def command_candidates(partial: str, names: Sequence[str]) -> list[str]:
    """The commands (ours from faces/slash_commands.py, then the servers' prompts) that start with `partial`."""
    return [name for name in names if name.startswith(partial)]
