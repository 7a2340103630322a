"""Server prompts as slash commands (`/server:prompt arg…`, REPL and ACP) and `@server:uri` resource mentions:
the command names, their arguments (positional in the prompt's order, or key=value), and the text they send.
Stdlib only; the pool (any `FeatureSource`) fetches.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Protocol

from sprout_agent.core.errors import ServerAnswered, ServerGone, SproutError
from sprout_agent.core.mentions import TRAILING
from sprout_agent.core.messages import Text
from sprout_agent.core.protocols import PromptInfo, ResourceInfo, ToolOutcome

MAX_RESOURCES = 10  # resource mentions attached per prompt, as for files


class PromptFailed(SproutError):
    """A prompt command that cannot run: bad arguments, or the server failed it. Its text says which."""


class FeatureSource(Protocol):
    """What the faces need of the pool for prompts and resource mentions."""

    def prompts(self) -> list[PromptInfo]: ...

    def resources(self) -> list[ResourceInfo]: ...

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> str: ...

    async def read_resource(self, server: str, uri: str) -> ToolOutcome: ...


def command_name(prompt: PromptInfo) -> str:
    """`server:prompt`, without the slash; whitespace in a prompt's name would end the command, so it becomes _."""
    return f"{prompt.server}:{'_'.join(prompt.name.split())}"


def find(prompts: Sequence[PromptInfo], name: str) -> PromptInfo | None:
    """The prompt a command (`server:prompt`, no slash) names, if any."""
    return next((prompt for prompt in prompts if command_name(prompt) == name), None)


def usage(prompt: PromptInfo) -> str:
    shown = [name.upper() if required else f"[{name.upper()}]" for name, required in prompt.arguments]
    return " ".join([f"/{command_name(prompt)}", *shown])


def arguments(prompt: PromptInfo, text: str) -> dict[str, str]:
    """`text` as the prompt's arguments: `key=value` for a known key, else the next positional one."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise PromptFailed(f"cannot read the arguments: {error}") from None
    names = [name for name, _ in prompt.arguments]
    given: dict[str, str] = {}
    positional = iter(names)
    for word in words:
        key, equals, value = word.partition("=")
        if equals and key in names:
            given[key] = value
            continue
        name = next((name for name in positional if name not in given), None)
        if name is None:
            raise PromptFailed(f"too many arguments; usage: {usage(prompt)}")
        given[name] = word
    missing = [name for name, required in prompt.arguments if required and name not in given]
    if missing:
        raise PromptFailed(f"missing {', '.join(missing)}; usage: {usage(prompt)}")
    return given


async def prompt_text(source: FeatureSource, name: str, argument: str) -> str | None:
    """The user turn a prompt command stands for; None when `name` is no server prompt."""
    prompt = find(source.prompts(), name)
    if prompt is None:
        return None
    given = arguments(prompt, argument)
    try:
        text = await source.get_prompt(prompt.server, prompt.name, given)
    except (ServerGone, ServerAnswered, TimeoutError) as error:
        raise PromptFailed(f"/{name}: {error or 'timed out'}") from None
    if not text.strip():
        raise PromptFailed(f"/{name}: the server's prompt is empty")
    return text


def mention(resource: ResourceInfo) -> str:
    """`server:uri`, as typed after `@`."""
    return f"{resource.server}:{resource.uri}"


async def attach_resources(source: FeatureSource, prompt: str, mentioned: Sequence[str]) -> tuple[str, list[str]]:
    """The prompt with each mentioned resource's text appended as `<resource …>`; notes for what was not."""
    known = {mention(item): item for item in source.resources()}
    parts: list[str] = []
    notes: list[str] = []
    words = (word if word in known else word.rstrip(TRAILING) for word in mentioned)
    for name in dict.fromkeys(word for word in words if word in known):
        if len(parts) >= MAX_RESOURCES:
            notes.append(f"@{name}: not attached (more than {MAX_RESOURCES} resources mentioned)")
            continue
        item = known[name]
        outcome = await source.read_resource(item.server, item.uri)
        texts = [block.text for block in outcome.content if isinstance(block, Text)]
        if outcome.is_error or len(texts) != len(outcome.content):
            why = texts[0] if outcome.is_error and texts else "an image: ask the model to read it"
            notes.append(f"@{name}: not attached ({why})")
            continue
        body = "\n".join(texts)
        parts.append(f'<resource server="{item.server}" uri="{item.uri}">\n{body.rstrip(chr(10))}\n</resource>')
    return (prompt if not parts else prompt + "\n\n" + "\n\n".join(parts)), notes
