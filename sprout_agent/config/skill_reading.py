"""The `skill` tool's reading: a skill's SKILL.md body, or a file beside it, confined to the skill's directory.

A repository's skill is untrusted text the model asked for: it is read, never run; a path that leaves the skill's
directory (`..`, an absolute path, a symlink pointing out) is refused, so is what is not a regular file (a FIFO
would block the agent's event loop), and what is read is bounded.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from sprout_agent.config.definitions import Skill

SKILL_FILE_MAX_BYTES = 256 * 1024
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def read_skill(skills: Sequence[Skill], name: str, file: str | None = None) -> str:
    """The body of `name`'s SKILL.md (front matter left out), or its `file`; ValueError says what is wrong."""
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        names = ", ".join(s.name for s in skills) or "none"
        names = names if len(names) <= 4000 else names[:3999] + "…"  # hundreds of skills: a bounded answer
        raise ValueError(f"no skill named {name!r}; the skills are: {names}")
    if file is None or file.strip() in ("", "SKILL.md"):
        return _without_front_matter(_read(skill.path)) + _listing(skill.path.parent)
    return _read(_inside(skill.path.parent, file))


def _inside(directory: Path, relative: str) -> Path:
    if os.path.isabs(relative) or ".." in Path(relative).parts:
        raise ValueError(f"{relative!r}: give a path relative to the skill's directory, without '..'")
    root = directory.resolve()
    target = (directory / relative).resolve()
    if not target.is_relative_to(root):
        raise ValueError(f"{relative!r} leads out of the skill's directory")
    return target


def _read(path: Path) -> str:
    try:
        # O_NONBLOCK: the `agent` server runs in the agent's event loop, and opening a FIFO would wait for a writer.
        with os.fdopen(os.open(path, _OPEN_FLAGS), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ValueError(f"{path.name} is not a regular file")
            data = f.read(SKILL_FILE_MAX_BYTES + 1)
    except OSError as error:
        raise ValueError(f"cannot read {path.name}: {error.strerror or error}") from None
    text = data[:SKILL_FILE_MAX_BYTES].decode("utf-8", errors="replace")
    cut = f"\n[… cut at {SKILL_FILE_MAX_BYTES} bytes]" if len(data) > SKILL_FILE_MAX_BYTES else ""
    return text + cut


def _without_front_matter(text: str) -> str:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")  # as definition_files reads it
    if not text.startswith("---"):
        return text
    end = text.find("\n---", 3)
    return text if end < 0 else text[end + 4 :].lstrip("\n")


def _listing(directory: Path, limit: int = 50) -> str:
    """The files beside SKILL.md, so the model knows what it may ask for."""
    names: list[str] = []
    for folder, _dirs, files in os.walk(directory):  # never into a symlinked directory (followlinks=False)
        names += [os.path.relpath(os.path.join(folder, f), directory) for f in files]
        if len(names) > limit * 10:
            break
    names = sorted(n for n in names if n != "SKILL.md")
    if not names:
        return ""
    shown = names[:limit] + ([f"… and {len(names) - limit} more"] if len(names) > limit else [])
    return "\n\nFiles beside SKILL.md (read one with the `file` argument):\n" + "\n".join(f"- {n}" for n in shown)
