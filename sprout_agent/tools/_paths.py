"""Where the dev tools may act: path resolution, the write boundary and "last read" records.

Reads may go anywhere (bash can read anything anyway); writes must land inside the working
directory (or an --add-dir directory, SPROUT_DEV_ADD_DIRS) after symlinks are resolved, unless
SPROUT_DEV_ALLOW_OUTSIDE=1.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from sprout_agent.tools._sandbox import Policy, Sandbox, trusted_which, under
from sprout_agent.tools._server import ToolError

ALLOW_OUTSIDE_ENV = "SPROUT_DEV_ALLOW_OUTSIDE"
ADD_DIRS_ENV = "SPROUT_DEV_ADD_DIRS"  # --add-dir: more directories write and edit may reach (os.pathsep-separated)

Stamp = tuple[int, int]  # (mtime_ns, size)


def stamp_of(path: str) -> Stamp:
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size)


@dataclass
class Workspace:
    """The working directory of one server process, and what this process has read or written."""

    root: str
    allow_outside: bool = False
    add_dirs: tuple[str, ...] = ()  # --add-dir: resolved directories writes may reach besides root
    sandbox: Sandbox = field(default_factory=Sandbox)  # for commands (bash); off unless from_environment
    _seen: dict[str, Stamp] = field(default_factory=dict[str, Stamp])

    @classmethod
    def from_environment(cls, cwd: str | None = None, env: Mapping[str, str] | None = None) -> Workspace:
        """From the process environment, with `env` (the server's config `env`) over it."""
        environ = {**os.environ, **(env or {})}
        root = os.path.realpath(cwd or os.getcwd())
        return cls(
            root=root,
            allow_outside=environ.get(ALLOW_OUTSIDE_ENV, "") == "1",
            add_dirs=tuple(os.path.realpath(p) for p in environ.get(ADD_DIRS_ENV, "").split(os.pathsep) if p),
            sandbox=Sandbox(Policy.from_env(environ, root)),
        )

    def resolve(self, path: str) -> str:
        """Absolute, symlink-free path; relative paths are taken from the working directory."""
        if not path:
            raise ToolError("empty path")
        if "\0" in path:
            raise ToolError("path contains a NUL byte")
        return os.path.realpath(os.path.join(self.root, os.path.expanduser(path)))

    def readable(self, path: str) -> str:
        """`resolve`, refusing what the sandbox hides from commands (credential directories, the agent's own
        data): read, grep and glob run outside the sandbox and must not read around its deny list."""
        real = self.resolve(path)
        hidden = self.hidden_at_or_above(real)
        if hidden is not None:
            raise ToolError(f"{real} is hidden by the sandbox's deny list ({hidden}: credentials); ask the user")
        return real

    def hidden_at_or_above(self, real: str) -> str | None:
        return next((h for h in self._hidden() if under(real, h)), None)

    def hidden_below(self, base: str) -> list[str]:
        """The hidden paths inside directory `base`, relative to it (searches leave them out)."""
        return [os.path.relpath(h, base) for h in self._hidden() if h != base and under(h, base)]

    def _hidden(self) -> tuple[str, ...]:
        return self.sandbox.hidden(os.environ) if self.sandbox.active() else ()

    def program(self, name: str) -> str | None:
        """A helper program (git, rg) that the tools run outside the sandbox: never one from a directory
        sandboxed commands may write, where a command could have put its own."""
        return trusted_which(name, self.sandbox.writable() if self.sandbox.active() else ())

    def inside(self, real: str) -> bool:
        return under(real, self.root)

    def writable(self, path: str) -> str:
        """Resolved path, or a ToolError when writing there would leave the working directory."""
        real = self.resolve(path)
        if not self.allow_outside and not self.inside(real) and not any(under(real, d) for d in self.add_dirs):
            raise ToolError(
                f"refusing to write {real}: it is outside the working directory {self.root} "
                f"(after resolving '..' and symlinks); set {ALLOW_OUTSIDE_ENV}=1 to allow it"
            )
        return real

    def display(self, real: str) -> str:
        """Path as shown to the model: relative inside the working directory, absolute outside."""
        return os.path.relpath(real, self.root) if self.inside(real) else real

    def remember(self, real: str) -> None:
        """Record the file's current mtime and size as seen by this server."""
        self._seen[real] = stamp_of(real)

    def check_fresh(self, real: str) -> None:
        """Refuse to modify an existing file never read here, or changed on disk since."""
        known = self._seen.get(real)
        shown = self.display(real)
        if known is None:
            raise ToolError(
                f"refusing to modify {shown}: it exists but has not been read in this session; read it first"
            )
        if stamp_of(real) != known:
            raise ToolError(f"{shown}: file changed on disk since it was last read; read it again first")
