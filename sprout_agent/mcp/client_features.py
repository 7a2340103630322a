"""What the client offers the servers it connects to: roots (the session's directories), elicitation (a
server's question to the user) and sampling (a server's model call), as one value the pool hands each session.

Stdlib only, like the pool: callbacks.py turns these into the SDK's callbacks, and the SDK declares the
capabilities from them (roots with `listChanged`; elicitation in form and URL modes; sampling only when the
face has a way to approve it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sprout_agent.core.events import Event
from sprout_agent.core.protocols import Delegation
from sprout_agent.mcp.elicitation import Elicitor, Unattended
from sprout_agent.mcp.sampling import Sampler
from sprout_agent.trust.write_policy import git_root


@dataclass(frozen=True, slots=True)
class Root:
    uri: str  # file://
    name: str


def roots_for(cwd: Path) -> tuple[Root, ...]:
    """The working directory, and the git checkout around it when that is another directory."""
    here = cwd.resolve()
    found = [Root(here.as_uri(), here.name or str(here))]
    found_top = git_root(str(here))  # trust/write_policy.py: never one in a directory anybody may write
    top = None if found_top is None else Path(found_top)
    if top is not None and top != here:
        found.append(Root(top.as_uri(), f"{top.name} (git root)"))
    return tuple(found)


Listener = Callable[[], Awaitable[None]]


@dataclass
class Roots:
    """The roots every server sees; `change` tells each live session (`notifications/roots/list_changed`)."""

    current: tuple[Root, ...]
    _listeners: list[Listener] = field(default_factory=list[Listener])

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Adds a session's notifier; returns what removes it (the session ended)."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def change(self, roots: tuple[Root, ...]) -> None:
        if roots == self.current:
            return
        self.current = roots
        for listener in list(self._listeners):
            try:
                await listener()
            except Exception:  # a server gone meanwhile: the others still hear of it
                continue


def _ignore(event: Event) -> None:
    del event


class SdkMessages(Protocol):
    """Carries a JSON-RPC message to a server the Claude Agent SDK hosts in its own process (`"type": "sdk"`)
    and returns the SDK's answer (sdk_session.SdkRelay)."""

    async def send(self, server: str, message: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ClientFeatures:
    """Given whole at construction (session/server_pool.py); `roots` changes inside, by `Roots.change`."""

    roots: Roots
    emit: Callable[[Event], None] = _ignore  # each question and model call a server makes is an event
    elicit: Elicitor = field(default_factory=Unattended)
    sampler: Sampler | None = None  # None: sampling is not offered (nobody could approve it)
    sdk: SdkMessages | None = None  # None: no SDK drives this session, so `"type": "sdk"` servers cannot start
    delegation: Delegation | None = None  # what the built-in `agent` server serves; None: it cannot start
