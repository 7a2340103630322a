"""What an edit or a write does to a file's text, and its unified diff: pure functions, stdlib only.

Shared by the dev server (which applies the change) and the agent's approval preview (sprout_agent/trust/diffs.py,
which shows it before it is made), so the preview is the change the tool will make. It must stay free of
mcp and of the rest of tools/, since the agent imports it.
"""

from __future__ import annotations

import difflib

from sprout_agent.trust.workspace import Refused

DIFF_CONTEXT = 3
MAX_DIFF_LINES = 400  # of the diff a face shows; the rest is counted in a note
MAX_DIFF_CHARS = 4000  # of the diff in the model's text
NEW_FILE = "/dev/null"


def decode(data: bytes) -> tuple[str, str]:
    """Text and the encoding to write it back with: UTF-8, else Latin-1 (which never fails)."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def _to_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def pick_variant(text: str, old: str, new: str) -> tuple[str, str]:
    """The (old, new) pair to apply: CRLF-translated for a CRLF file, as given otherwise."""
    crlf = text.count("\r\n")
    if crlf and crlf >= text.count("\n") - crlf:
        old_crlf, new_crlf = _to_crlf(old), _to_crlf(new)
        if old_crlf in text or old not in text:
            return old_crlf, new_crlf
    return old, new


def replaced(text: str, old: str, new: str, replace_all: bool) -> tuple[str, int]:
    """The text after the edit and how many matches `old` had; the text is unchanged unless the edit applies
    (one match, or any number with `replace_all`): the caller says why not from the count."""
    old, new = pick_variant(text, old, new)
    count = text.count(old)
    if count == 0 or (count > 1 and not replace_all):
        return text, count
    return text.replace(old, new), count


def unified(path: str, before: str | None, after: str, *, context: int = DIFF_CONTEXT, max_lines: int = 0) -> str:
    """The unified diff from `before` (None: a new file, diffed against /dev/null) to `after`, with LF line
    ends; over `max_lines` lines (0: no limit) it is cut with a note of how many lines were left out."""
    lines = difflib.unified_diff(
        [] if before is None else before.replace("\r\n", "\n").splitlines(keepends=True),
        after.replace("\r\n", "\n").splitlines(keepends=True),
        fromfile=NEW_FILE if before is None else f"a/{path}",
        tofile=f"b/{path}",
        n=context,
    )
    out = [line if line.endswith("\n") else line + "\n" for line in lines]
    if max_lines and len(out) > max_lines:
        out = [*out[:max_lines], f"… {len(out) - max_lines} more lines of the diff not shown\n"]
    return "".join(out)


def check_edit(old: str, new: str) -> None:
    """The edit's strings, before any file is touched."""
    if not old:
        raise Refused("old_string is empty; use write to create a file or give text to replace")
    if old == new:
        raise Refused("old_string and new_string are identical; nothing to change")


def edited(shown: str, text: str, old: str, new: str, replace_all: bool) -> tuple[str, int]:
    """The file's text after the edit, and the number of replacements; Refused when `old` does not match once
    (or at all, with `replace_all`). The dev server edits a file's text with it, the editor route a buffer's."""
    after, count = replaced(text, old, new, replace_all)
    if count == 0:
        raise Refused(
            f"old_string not found in {shown}; it must match exactly, including whitespace and "
            "indentation (read the file again to copy the text)"
        )
    if count > 1 and not replace_all:
        raise Refused(
            f"old_string occurs {count} times in {shown}; add surrounding lines to make it unique, "
            "or set replace_all=true to replace every occurrence"
        )
    return after, count


def edit_report(shown: str, before: str, after: str, count: int) -> tuple[str, str]:
    """(what the model reads: the count and a short diff, the whole diff for the faces) of an edit made."""
    diff = unified(shown, before, after, context=2)
    if len(diff) > MAX_DIFF_CHARS:
        diff = diff[:MAX_DIFF_CHARS] + f"... [diff truncated at {MAX_DIFF_CHARS} chars]\n"
    return f"Edited {shown}: {count} replacement(s)\n{diff}", unified(shown, before, after, max_lines=MAX_DIFF_LINES)


def written(shown: str, before: str | bool | None, content: str) -> tuple[str, str]:
    """(what the model reads, the diff for the faces) of a write made: `before` is the text it replaced, None
    for a new file, False for one whose old text is not known (too large, binary): no diff then."""
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "Created" if before is None else "Overwrote"
    size = len(content.encode("utf-8", "surrogatepass"))
    diff = unified(shown, before, content, max_lines=MAX_DIFF_LINES) if not isinstance(before, bool) else ""
    return f"{verb} {shown} ({lines} lines, {size} bytes)", diff
