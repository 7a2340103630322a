"""What a project or user defines in Markdown for the agent to use: agent definitions (subagents), skills and custom
slash commands, in the formats Claude Code reads (`.claude/agents/*.md`, `.claude/skills/*/SKILL.md`,
`.claude/commands/*.md`). The types are here; the files are read by `definition_files`.

A project's definitions are untrusted text: they choose prompts and tool subsets, never more than the session may
use (docs/subagents.md says what a hostile one can and cannot do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sprout_agent.trust.opening import Fixed

# Claude Code's model aliases in a definition's `model`; `inherit` (or none) is the parent's model.
INHERIT = "inherit"


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """One kind of subagent the model may start with the `task` tool."""

    name: str
    description: str  # what the model reads to choose it
    prompt: str  # the child's system prompt (the body of the Markdown file)
    tools: tuple[str, ...] | None = None  # names or patterns of the parent's tools; None: all the parent's
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None  # an alias (sonnet, opus, haiku, inherit) or a model id; None: the parent's
    max_requests: int | None = None  # the definition's `maxTurns`: model requests per task
    source: str = "built-in"  # the file it came from, "sdk", "--agents" or "built-in"


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: only its name and description go in the system prompt; the body is read when the model asks."""

    name: str
    description: str
    path: Path  # its SKILL.md; the files beside it belong to it
    directory: Fixed  # pinned when the skill was found: its files are read from it, or not at all
    source: str = "project"  # project or user


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """A slash command from a Markdown file: its body, with `$ARGUMENTS` and `$1`… filled in, is the prompt."""

    name: str
    description: str
    body: str
    argument_hint: str = ""
    source: str = "project"


@dataclass(frozen=True, slots=True)
class Definitions:
    agents: tuple[AgentDefinition, ...] = ()
    skills: tuple[Skill, ...] = ()
    commands: tuple[CustomCommand, ...] = ()
    notices: tuple[str, ...] = field(default=())  # one line per file that could not be used, naming it


# Claude Code's two everyday agents; a definition of the same name (a file, `--agents`, the SDK) replaces one.
BUILTIN_AGENTS = (
    AgentDefinition(
        "general-purpose",
        "A capable agent for a multi-step task: research, a change across files, a review. It has all your tools.",
        "You are a subagent of sprout-agent, given one task by the main agent. Complete it with the tools you have, "
        "then reply with a concise report of what you found or did: the facts, paths and results the main agent "
        "needs, nothing else. Your reply is all the main agent sees of your work.",
    ),
    AgentDefinition(
        "Explore",
        "A fast, read-only searcher: finds files, symbols and facts in the code base and reports them with paths.",
        "You are a read-only search subagent of sprout-agent. Find what the task asks for with the read, glob and "
        "grep tools; change nothing. Reply with a short report: the answer, with the file paths (and line numbers) "
        "that support it.",
        tools=("dev__read", "dev__glob", "dev__grep"),
        model="haiku",
    ),
)
# The task tool's listing of BUILTIN_AGENTS alone: one line, not one per type (every request carries it).
BUILTIN_TYPES_LINE = (
    "subagent_type: general-purpose (the default: all your tools) or Explore (a fast, read-only searcher that "
    "reports paths)."
)
