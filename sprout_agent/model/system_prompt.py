"""The system prompt: who the agent is, where it runs, and the project's AGENTS.md / CLAUDE.md files (read by the one
reader, trust/opening.py: a CLAUDE.md linked to a key the deny list hides is not read into the prompt)."""

from __future__ import annotations

import datetime
import platform
from collections.abc import Sequence
from pathlib import Path

from sprout_agent.core.listing import bounded_listing
from sprout_agent.trust.opening import NOTHING_DENIED, Reader, Refused
from sprout_agent.trust.write_policy import project_directories

_NO_DENY_LIST = Reader(NOTHING_DENIED)  # a prompt built outside a session (tests, the SDK's before its start)
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
INSTRUCTIONS_MAX_CHARS = 32 * 1024  # per file; documented in docs/models.md
SKILLS_INTRO = (
    "Skills (instructions and files for particular tasks): when a task matches a skill's description, load it "
    'first with the agent__skill tool ({"skill": NAME}) and follow it.'
)
# A skill's line in the prompt: its description cut here, and the whole listing bounded (a repository may hold
# hundreds of skills with 1 KB descriptions: sent in full on every request, they would cost 100k tokens and more).
SKILL_LINE_DESCRIPTION_CHARS = 200
SKILLS_MAX_CHARS = 12_000  # ~3k tokens; past it the rest are named, their names bounded too
SKILL_NAMES_MAX_CHARS = 2_000

BASE_PROMPT = """You are sprout-agent, a command-line coding agent. You help the user with software engineering \
tasks in their working directory, using the tools offered to you (tools are named `server__tool`).
Read before you change; keep changes minimal and correct; run the project's checks when you can.
When the task is done, reply with a short summary of what you did and end your turn."""


def instruction_files(cwd: Path) -> list[Path]:
    """AGENTS.md and CLAUDE.md from the git root (or cwd) down to cwd, outermost first (trust/write_policy.py:
    never from a directory anybody may write, nor above one)."""
    directories = map(Path, project_directories(str(cwd)))
    return [d / name for d in directories for name in INSTRUCTION_FILES if (d / name).is_file()]


def build_system_prompt(
    cwd: Path,
    *,
    replace: str | None = None,
    append: str | None = None,
    base: str = BASE_PROMPT,
    skills: Sequence[tuple[str, str]] = (),
    reader: Reader = _NO_DENY_LIST,
) -> str:
    """Byte-stable within a session (the date, not the time) so the prompt prefix stays cached. `base`: who the
    agent is (a subagent's definition says it). `skills`: (name, description) of each skill the `agent__skill`
    tool loads; only these lines are in the prompt, the bodies are read when the model asks."""
    if replace is not None:
        parts = [replace]
    else:
        today = datetime.date.today().isoformat()
        parts = [
            base,
            f"Working directory: {cwd}\nPlatform: {platform.system()} {platform.release()}\nDate: {today}",
        ]
        parts += [f"Instructions from {path}:\n{_instructions(reader, path, cwd)}" for path in instruction_files(cwd)]
    if skills:
        parts.append(skills_section(skills))
    if append:
        parts.append(append)
    return "\n\n".join(parts)


def _instructions(reader: Reader, path: Path, cwd: Path) -> str:
    """The file's text, cut at INSTRUCTIONS_MAX_CHARS (read no further than that can take), or why it was not read."""
    try:
        data = reader.read(str(path), str(cwd), INSTRUCTIONS_MAX_CHARS * 4)  # 4: UTF-8's longest character
    except (OSError, Refused) as error:
        return f"[not read: {getattr(error, 'strerror', None) or error}]"
    text = data.decode("utf-8", errors="replace")
    if len(text) > INSTRUCTIONS_MAX_CHARS:
        text = text[:INSTRUCTIONS_MAX_CHARS] + f"\n[… {path.name} cut at {INSTRUCTIONS_MAX_CHARS} characters]"
    return text


def skills_section(skills: Sequence[tuple[str, str]]) -> str:
    """A line per skill (name: description, cut), within SKILLS_MAX_CHARS; past it the others by name only."""
    return bounded_listing(
        [SKILLS_INTRO],
        skills,
        max_chars=SKILLS_MAX_CHARS,
        names_max_chars=SKILL_NAMES_MAX_CHARS,
        description_max_chars=SKILL_LINE_DESCRIPTION_CHARS,
    )
