"""The `skill` tool's reading: a skill's SKILL.md body, or a file beside it, confined to the skill's directory.

A repository's skill is untrusted text the model asked for: it is read, never run, by the one reader
(trust/opening.py) from the skill's directory as pinned when the skill was found. A directory replaced or swapped
for a symbolic link since (by a command the model ran), a path that leaves it (`..`, an absolute path, a link out),
what the deny list hides and what is not a regular file (a FIFO would block the agent's event loop) are refused,
and what is read is bounded.
"""

from __future__ import annotations

from collections.abc import Sequence

from sprout_agent.config.definitions import Skill
from sprout_agent.trust.opening import Fixed, Refused

SKILL_FILE_MAX_BYTES = 256 * 1024
SKILL_FILE = "SKILL.md"


def read_skill(skills: Sequence[Skill], name: str, file: str | None = None) -> str:
    """The body of `name`'s SKILL.md (front matter left out), or its `file`; ValueError says what is wrong."""
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        names = ", ".join(s.name for s in skills) or "none"
        names = names if len(names) <= 4000 else names[:3999] + "…"  # hundreds of skills: a bounded answer
        raise ValueError(f"no skill named {name!r}; the skills are: {names}")
    wanted = SKILL_FILE if file is None or file.strip() in ("", SKILL_FILE) else file
    try:
        text = _read(skill.directory, wanted)
        return _without_front_matter(text) + _listing(skill.directory) if wanted == SKILL_FILE else text
    except Refused as refusal:
        raise ValueError(f"skill {name}: {refusal}") from None
    except OSError as error:
        raise ValueError(f"cannot read {wanted}: {error.strerror or error}") from None


def _read(directory: Fixed, relative: str) -> str:
    data = directory.read(relative, SKILL_FILE_MAX_BYTES)
    text = data[:SKILL_FILE_MAX_BYTES].decode("utf-8", errors="replace")
    cut = f"\n[… cut at {SKILL_FILE_MAX_BYTES} bytes]" if len(data) > SKILL_FILE_MAX_BYTES else ""
    return text + cut


def _without_front_matter(text: str) -> str:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")  # as definition_files reads it
    if not text.startswith("---"):
        return text
    end = text.find("\n---", 3)
    return text if end < 0 else text[end + 4 :].lstrip("\n")


def _listing(directory: Fixed, limit: int = 50) -> str:
    """The files beside SKILL.md, so the model knows what it may ask for (never through a link)."""
    names = sorted(n for n in directory.files(limit * 10) if n != SKILL_FILE)
    if not names:
        return ""
    shown = names[:limit] + ([f"… and {len(names) - limit} more"] if len(names) > limit else [])
    return "\n\nFiles beside SKILL.md (read one with the `file` argument):\n" + "\n".join(f"- {n}" for n in shown)
