"""`outputStyle` from Claude Code's settings: a built-in style or a `.claude/output-styles/NAME.md` file (the
project's, then the user's), whose instructions are added to the system prompt. Read through the one reader."""

from __future__ import annotations

import os
from pathlib import Path

from sprout_agent.config.definition_files import front_matter
from sprout_agent.trust.opening import DenyList, Reader, Refused

STYLE_MAX_BYTES = 64 * 1024
# Our wording of the styles Claude Code ships (the idea, not its text): `default` adds nothing.
BUILTIN = {
    "default": "",
    "explanatory": (
        "Output style: Explanatory. While you work, add short insights about why the code and the codebase are the "
        "way they are and why you choose one approach over another; keep them brief and next to the work."
    ),
    "learning": (
        "Output style: Learning. Work with the user as a teacher would: explain what you do and why, and where a "
        "small, meaningful piece of code is a good exercise, leave it for the user with a TODO(human) marker and "
        "say what it should do."
    ),
}


def load_style(name: str, cwd: Path, home: Path | None, deny: DenyList) -> tuple[str | None, str | None]:
    """(the style's instructions, None: found, "" for default), or (None, a notice) when there is no such style."""
    builtin = BUILTIN.get(name.lower())
    if builtin is not None:
        return builtin, None
    places = [cwd / ".claude" / "output-styles", *([home / ".claude" / "output-styles"] if home else [])]
    reader = Reader(deny)
    for directory in places:
        try:
            names = sorted(entry for entry in os.listdir(directory) if entry.endswith(".md"))
        except OSError:
            continue
        for entry in names:
            found = _style(reader, directory / entry, name)
            if found is not None:
                return found, None
    return None, f"outputStyle {name!r}: no such style (built in: {', '.join(BUILTIN)}; or .claude/output-styles)"


def _style(reader: Reader, path: Path, name: str) -> str | None:
    """The file's instructions when it is the style `name` (its front matter's `name`, else its file name)."""
    try:
        data = reader.read(str(path), str(path.parent), STYLE_MAX_BYTES)
        meta, body = front_matter(data[:STYLE_MAX_BYTES].decode("utf-8-sig").replace("\r\n", "\n"))
    except (OSError, Refused, ValueError):
        return None
    called = meta.get("name") if isinstance(meta.get("name"), str) else path.stem
    return body.strip() if str(called).lower() == name.lower() else None
