"""A late-bound handle: the one way to a collaborator that is built after what needs it (the session's agent, for
the `agent` server's delegator; the model, for a server's sampling request). The composition root makes it first,
hands it out at construction and binds it once; a use before that, or a second bind, is refused."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class NotBound(RuntimeError):
    """The handle was used before its collaborator existed."""


class Handle(Protocol[T_co]):
    """What a user of the handle gets: it may ask and use, never bind (only the one who made it binds)."""

    @property
    def bound(self) -> bool: ...

    def get(self) -> T_co: ...


class Late(Generic[T]):
    """`what` names the collaborator in the errors (the session's agent, the model)."""

    __slots__ = ("_value", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._value: tuple[T] | None = None  # boxed: None itself may be bound

    @property
    def bound(self) -> bool:
        return self._value is not None

    def bind(self, value: T) -> None:
        if self._value is not None:  # a second session's agent or model here would serve the first one's servers
            raise RuntimeError(f"{self._what} is bound already")
        self._value = (value,)

    def get(self) -> T:
        if self._value is None:
            raise NotBound(f"{self._what} is not ready yet")
        return self._value[0]
