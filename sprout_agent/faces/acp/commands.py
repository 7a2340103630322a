"""Slash commands for editors (the table in faces/slash_commands.py): announced with `available_commands_update`, run
when a prompt names one."""

from __future__ import annotations

from collections.abc import Sequence

from sprout_agent.config.definitions import CustomCommand
from sprout_agent.core.protocols import PromptInfo
from sprout_agent.faces import slash_commands as shared
from sprout_agent.faces.acp.wire import Json
from sprout_agent.faces.slash_commands import (
    Command,
    commands_for,
    markdown_table,
    server_notes,
    server_rows,
    shared_command,
    tool_rows,
)
from sprout_agent.mcp.prompts import FeatureSource, command_name, prompt_text
from sprout_agent.session.runtime import Runtime


def available_commands(prompts: Sequence[PromptInfo] = (), custom: Sequence[CustomCommand] = ()) -> Json:
    """Ours, then the custom commands (`.claude/commands`), then each server prompt as `server:prompt` (their
    descriptions and arguments are the project's and the server's)."""
    shown = [
        (command_name(prompt), prompt.description[:200] or f"{prompt.server}'s prompt {prompt.name}", _hint(prompt))
        for prompt in prompts
    ]
    ours = [(c.name, c.summary[:1].upper() + c.summary[1:], c.argument) for c in commands_for("acp")]
    kept = [(c.name, c.description[:200], c.argument_hint or None) for c in shared.custom_for(custom, "acp")[0]]
    commands: list[Json] = []
    for name, description, hint in (*ours, *kept, *shown):
        command: Json = {"name": name, "description": description}
        if hint is not None:
            command["input"] = {"hint": hint}
        commands.append(command)
    return {"sessionUpdate": "available_commands_update", "availableCommands": commands}


def _hint(prompt: PromptInfo) -> str | None:
    if not prompt.arguments:
        return None
    return " ".join(name if required else f"[{name}]" for name, required in prompt.arguments) + " (or name=value)"


def custom_turn(custom: Sequence[CustomCommand], text: str) -> str | None:
    """The prompt a `/NAME args` of a custom command stands for; None when the text names none."""
    found = shared.custom_command(custom, text, "acp")
    return shared.expand(*found) if found is not None else None


async def prompt_turn(source: FeatureSource, text: str) -> str | None:
    """The user turn a `/server:prompt …` prompt stands for; None when the text names no server prompt."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    head, _, argument = stripped[1:].partition(" ")
    return await prompt_text(source, head, argument.strip())


def parse(text: str) -> tuple[Command, str] | None:
    """(command, argument) when the prompt is one of our commands; anything else goes to the model as typed."""
    return shared.parse(text, "acp")


async def run(runtime: Runtime, command: Command, argument: str) -> str:
    """Runs a command; returns the text shown to the user as the agent's message (Markdown)."""
    if command.name == "tools":
        return markdown_table(("server", "tool", "description"), tool_rows(runtime.agent))
    if command.name == "servers":
        header = ("server", "state", "tools", "hooks", "start", "last error")
        notes = "\n\n".join(text for text, _ in server_notes(runtime))
        return markdown_table(header, server_rows(runtime)) + "\n\n" + notes
    lines = await shared_command(runtime, command, argument)
    return "\n".join(text for text, _ in lines or [(f"/{command.name} is not available here", "")])
