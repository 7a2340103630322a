"""Where the dev tools may act: path resolution, the write boundary and "last read" records.

Shared by the dev server (tools/) and the editor's route for the same tools (faces/acp/editor_files.py), so a
file reached through an editor's buffers obeys every rule a file reached by the server does.

Reads may go anywhere but the sandbox's deny list (bash can read the rest anyway); writes follow the one
write policy the sandbox's mounts follow too (trust/write_policy.py): inside the working directory, its git
root, an --add-dir (SPROUT_DEV_ADD_DIRS) or allow-write directory after symlinks are resolved, never in a git
directory or the deny list. SPROUT_DEV_ALLOW_OUTSIDE=1 lifts only the first rule. Files are opened and written
by the one reader and writer (trust/opening.py), along the path these rules checked.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sprout_agent.trust.env_flags import env_flag
from sprout_agent.trust.opening import NOTHING_DENIED, DenyList, Reader, Refused, WriteTarget, kind_of
from sprout_agent.trust.sandbox import Policy, Sandbox, trusted_which
from sprout_agent.trust.write_policy import ADD_DIRS_ENV, ALLOW_OUTSIDE_ENV, WritePolicy, under

__all__ = ["Refused", "Stamp", "Workspace", "check_fresh", "kind_of"]  # Refused and kind_of: opening's, re-exported

Stamp = tuple[int, int]  # (mtime_ns, size)


def stamp_of(path: str) -> Stamp:
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size)


@dataclass
class Workspace:
    """The working directory of one server process, and what this process has read or written."""

    root: str
    allow_outside: bool = False
    sandbox: Sandbox = field(default_factory=Sandbox)  # for commands (bash); off unless from_environment
    _seen: dict[str, Stamp] = field(default_factory=dict[str, Stamp])

    @classmethod
    def from_environment(cls, cwd: str | None = None, env: Mapping[str, str] | None = None) -> Workspace:
        """From the process environment, with `env` (the server's config `env`) over it."""
        environ = {**os.environ, **(env or {})}
        root = os.path.realpath(cwd or os.getcwd())
        policy = Policy.from_env(environ, root)
        # --add-dir directories are writable for commands as for the write tools: one set of roots.
        added = tuple(os.path.realpath(p) for p in environ.get(ADD_DIRS_ENV, "").split(os.pathsep) if p)
        policy = replace(policy, allow_write=tuple(dict.fromkeys((*policy.allow_write, *added))))
        return cls(root=root, allow_outside=env_flag(environ, ALLOW_OUTSIDE_ENV), sandbox=Sandbox(policy))

    def resolve(self, path: str) -> str:
        """Absolute, symlink-free path; relative paths are taken from the working directory."""
        return self.reader().resolve(path, self.root)

    def reader(self) -> Reader:
        """The one reader, with the deny list the sandbox hides from commands (credential directories, the agent's
        own data): read, grep and glob run outside the sandbox and must not read around it."""
        return Reader(self.deny_list())

    def deny_list(self) -> DenyList:
        if not self.sandbox.active():
            return NOTHING_DENIED
        return DenyList.of(self.sandbox.deny_list(os.environ), self.root)

    def readable(self, path: str) -> str:
        """`resolve`, refusing what the deny list hides."""
        return self.reader().readable(path, self.root)

    def existing_file(self, path: str) -> str:
        """`readable`, and there as a regular file (followed by the open's own check, where there is an open)."""
        real = self.readable(path)
        try:
            mode = os.stat(real).st_mode
        except FileNotFoundError:
            raise Refused(f"file not found: {self.display(real)}") from None
        if stat.S_ISDIR(mode):
            raise Refused(f"{self.display(real)} is a directory, not a file; use glob or bash ls to list it")
        if not stat.S_ISREG(mode):
            raise Refused(f"{self.display(real)} is {kind_of(mode)}, not a regular file")
        return real

    def hidden_below(self, base: str) -> list[str]:
        """The hidden paths inside directory `base`, relative to it (searches leave them out)."""
        return self.deny_list().below(base)

    def program(self, name: str) -> str | None:
        """A helper program (rg; git through trust/git_runner) that the tools run outside the sandbox: never one
        from a directory sandboxed commands may write, where a command could have put its own."""
        return trusted_which(name, self.untrusted_dirs())

    def untrusted_dirs(self) -> tuple[str, ...]:
        """Where sandboxed commands may write: no helper program is taken from there."""
        return self.sandbox.writable() if self.sandbox.active() else ()

    def inside(self, real: str) -> bool:
        return under(real, self.root)

    def write_policy(self) -> WritePolicy:
        """Built for each write: a git directory made since (`git init`, a worktree) is protected at once."""
        policy = self.sandbox.policy
        return WritePolicy.build(
            mode=policy.mode,
            root=self.root,
            allow_write=policy.allow_write,
            denied=self.sandbox.deny_list(os.environ) if self.sandbox.active() else (),
            anywhere=self.allow_outside,
        )

    def writable(self, path: str) -> WriteTarget:
        """The resolved path and the writable root a race-free write walks down from, or a Refused saying why the
        write policy refuses it."""
        return WriteTarget.checked(self.resolve(path), self.write_policy())

    def display(self, real: str) -> str:
        """Path as shown to the model: relative inside the working directory, absolute outside."""
        return os.path.relpath(real, self.root) if self.inside(real) else real

    def remember(self, real: str) -> None:
        """Record the file's current mtime and size as seen by this server."""
        self._seen[real] = stamp_of(real)

    def check_fresh(self, real: str) -> None:
        """Refuse to modify an existing file never read here, or changed on disk since."""
        check_fresh(self.display(real), self._seen.get(real), stamp_of(real))


def check_fresh(shown: str, known: object, now: object, where: str = "on disk") -> None:
    """The read-before-write rule: `known` is what was read (None: never), `now` what is there now (on disk, or
    in the editor's buffer)."""
    if known is None:
        raise Refused(f"refusing to modify {shown}: it exists but has not been read in this session; read it first")
    if now != known:
        raise Refused(f"{shown}: file changed {where} since it was last read; read it again first")
