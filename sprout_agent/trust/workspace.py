"""Where the dev tools may act: path resolution, the write boundary and "last read" records.

Shared by the dev server (tools/) and the editor's route for the same tools (faces/acp/editor_files.py), so a
file reached through an editor's buffers obeys every rule a file reached by the server does.

Reads may go anywhere but the sandbox's deny list (bash can read the rest anyway); writes follow the one
write policy the sandbox's mounts follow too (trust/write_policy.py): inside the working directory, its git
root, an --add-dir (SPROUT_DEV_ADD_DIRS) or allow-write directory after symlinks are resolved, never in a git
directory or the deny list. SPROUT_DEV_ALLOW_OUTSIDE=1 lifts only the first rule.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sprout_agent.trust.sandbox import Policy, Sandbox, trusted_which
from sprout_agent.trust.write_policy import ADD_DIRS_ENV, ALLOW_OUTSIDE_ENV, WritePolicy, under

Stamp = tuple[int, int]  # (mtime_ns, size)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


class Refused(Exception):
    """A rule refused the operation; the message is for the model (the tools make it an is_error result)."""


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
        return cls(root=root, allow_outside=environ.get(ALLOW_OUTSIDE_ENV, "") == "1", sandbox=Sandbox(policy))

    def resolve(self, path: str) -> str:
        """Absolute, symlink-free path; relative paths are taken from the working directory."""
        if not path:
            raise Refused("empty path")
        if "\0" in path:
            raise Refused("path contains a NUL byte")
        return os.path.realpath(os.path.join(self.root, os.path.expanduser(path)))

    def readable(self, path: str) -> str:
        """`resolve`, refusing what the sandbox hides from commands (credential directories, the agent's own
        data): read, grep and glob run outside the sandbox and must not read around its deny list."""
        real = self.resolve(path)
        hidden = self.hidden_at_or_above(real)
        if hidden is not None:
            raise Refused(f"{real} is hidden by the sandbox's deny list ({hidden}: credentials); ask the user")
        return real

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

    def check_opened(self, fd: int) -> None:
        """Refuse a file that turned out, once open, to be behind the deny list: a command can swap a directory
        for a symlink into ~/.ssh between `readable`'s check and the open (Linux names the open file)."""
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc: the check before the open is all there is
            return
        hidden = self.hidden_at_or_above(opened)
        if hidden is not None:
            raise Refused(f"{opened} is hidden by the sandbox's deny list ({hidden}: credentials); ask the user")

    def hidden_at_or_above(self, real: str) -> str | None:
        return next((h for h in self._hidden() if under(real, h)), None)

    def hidden_below(self, base: str) -> list[str]:
        """The hidden paths inside directory `base`, relative to it (searches leave them out)."""
        return [os.path.relpath(h, base) for h in self._hidden() if h != base and under(h, base)]

    def _hidden(self) -> tuple[str, ...]:
        return self.sandbox.hidden(os.environ) if self.sandbox.active() else ()

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

    def writable(self, path: str) -> tuple[str, str]:
        """The resolved path and the directory a race-free write walks down from (the outermost writable root
        holding it), or a Refused saying why the write policy refuses it."""
        real = self.resolve(path)
        policy = self.write_policy()
        why = policy.refusal(real)
        if why is not None:
            raise Refused(f"refusing to write {real}: {why}")
        start = next((root for root in sorted(policy.roots, key=len) if under(real, root)), os.sep)
        return real, start

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
