"""Where `mcp serve --http` listens, and whether it may (a leaf: the command line checks it before any import)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

TOKEN_ENV = "SPROUT_AGENT_SERVE_TOKEN"


@dataclass(frozen=True, slots=True)
class Listening:
    """`--http [HOST:]PORT`: where Streamable HTTP listens."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        """Only this machine can connect (though any of its users can: hence the token)."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:  # a name: it may resolve anywhere
            return False

    def refusal(self, environ: Mapping[str, str]) -> str | None:
        """Why the server will not listen here: a host others can reach, without a token to keep them out."""
        if self.loopback or environ.get(TOKEN_ENV):
            return None
        return (
            f"--http {self.host}:{self.port} can be reached from other machines, and whoever connects drives the agent "
            f"as you: set {TOKEN_ENV} (every request must then carry it as a bearer token) and put TLS in front"
        )
