"""Slash commands for editors: announced with `available_commands_update`, run when a prompt names one."""

from __future__ import annotations

from collections.abc import Sequence

from sprout_agent.core.agent import Agent
from sprout_agent.core.protocols import PromptInfo
from sprout_agent.core.status import context_line
from sprout_agent.faces.acp.wire import Json
from sprout_agent.mcp.prompts import FeatureSource, command_name, prompt_text

# name, description, input hint (None: the command takes no argument)
COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    ("compact", "Summarise the conversation now to free context", "optional focus for the summary"),
    ("context", "How full the context window is", None),
    ("cost", "Tokens and cost so far in this session", None),
    ("clear", "Start a new conversation (the _Stop budget spans the whole session)", None),
    ("tools", "The tools the model sees, by server", None),
)
_NAMES = frozenset(name for name, _, _ in COMMANDS)


def available_commands(prompts: Sequence[PromptInfo] = ()) -> Json:
    """Ours, then each server prompt as `server:prompt` (its description and arguments are the server's)."""
    shown = [
        (command_name(prompt), prompt.description[:200] or f"{prompt.server}'s prompt {prompt.name}", _hint(prompt))
        for prompt in prompts
    ]
    commands: list[Json] = []
    for name, description, hint in (*COMMANDS, *shown):
        command: Json = {"name": name, "description": description}
        if hint is not None:
            command["input"] = {"hint": hint}
        commands.append(command)
    return {"sessionUpdate": "available_commands_update", "availableCommands": commands}


def _hint(prompt: PromptInfo) -> str | None:
    if not prompt.arguments:
        return None
    return " ".join(name if required else f"[{name}]" for name, required in prompt.arguments) + " (or name=value)"


async def prompt_turn(source: FeatureSource, text: str) -> str | None:
    """The user turn a `/server:prompt …` prompt stands for; None when the text names no server prompt."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    head, _, argument = stripped[1:].partition(" ")
    return await prompt_text(source, head, argument.strip())


def parse(text: str) -> tuple[str, str] | None:
    """(name, argument) when the prompt is one of our commands; anything else goes to the model as typed."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    head, _, argument = stripped[1:].partition(" ")
    return (head, argument.strip()) if head in _NAMES else None


async def run(agent: Agent, name: str, argument: str) -> str:
    """Runs a command; returns the text shown to the user as the agent's message."""
    if name == "cost":
        return agent.ledger.summary()
    if name == "context":
        return context_line(agent)
    if name == "clear":
        await agent.clear_session()
        return "New conversation."
    if name == "tools":
        return "\n".join(f"- `{spec.name}` ({spec.server}): {_first_line(spec.description)}" for spec in agent.tools)
    await agent.compact("manual", focus=argument or None)
    return f"Compacted. {context_line(agent)}"


def _first_line(text: str) -> str:
    return (text or "").split("\n", 1)[0][:100]
