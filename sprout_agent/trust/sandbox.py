"""The OS sandbox for commands the dev tools run: what they may write, read, see and reach (Linux, bubblewrap).

Mechanism: bubblewrap (`bwrap`), chosen by measurement on Linux 6.18 / 2 cores: a dev__bash `true` call
through the in-process server takes a median 5.4 ms unsandboxed and 13.8 ms under bwrap (pid + mount
namespaces; 14.7 ms with a network namespace too), so 8-10 ms added per call (`scripts/bench --only
sandbox`), well inside the 30 ms goal. Landlock (ctypes in a preexec, no helper binary) added about 7 ms to
a bare `subprocess.run` (a preexec forces fork instead of vfork) but only filters paths and TCP: it
cannot hide other processes (no pid namespace), a read deny list needs an allow list of every sibling of
every denied path (and misses files created later), and UDP/DNS stay open. bwrap gives all of it with
plain mounts:
- `/` read-only; the writable roots (working directory, its git root, `allow_write`) bound writable in
  `workspace-write`, nothing in `read-only`; a private temp directory (one per server) mounted on /tmp;
- a new pid namespace with its own /proc: the agent and every other process are invisible, so
  `/proc/<agent>/environ` cannot be read; background jobs die when the command's shell ends (pid 1 of the
  namespace exits) or when the agent dies (`--die-with-parent`);
- the deny list (`DENY_READ`, plus `deny_read`, e.g. the agent's sessions) covered by an empty tmpfs
  (directories) or /dev/null (files); root is bound by this too, unlike file modes;
- network off: a new network namespace with only loopback (no route out, no host listeners).
Where bubblewrap cannot run (not installed, no user namespaces), commands run under Landlock instead
(landlock.py: writes and TCP only, weaker, said so at start-up); where neither works `probe`/`choose`
say why and commands run unsandboxed unless the policy is `required`. What may be written is decided by
write_policy.py, for these mounts and the in-process write tools alike. macOS (`sandbox-exec`) is not
done. Stdlib only.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

from sprout_agent.trust import landlock as _landlock
from sprout_agent.trust.child_argv import with_operands
from sprout_agent.trust.env_flags import env_flag
from sprout_agent.trust.runtime_dir import hidden_from_commands
from sprout_agent.trust.sandbox_output import (
    DENIED_WRITE,
    LANDLOCK_DENIED,
    LANDLOCK_NO_TCP,
    NAMES_TMP,
    NO_NETWORK,
    denied_write,
)
from sprout_agent.trust.write_policy import WritePolicy, git_root, under

OFF, READ_ONLY, WORKSPACE_WRITE, REQUIRED = "off", "read-only", "workspace-write", "required"
BWRAP, LANDLOCK = "bubblewrap", "landlock"
MODES = (OFF, READ_ONLY, WORKSPACE_WRITE)

# The variables a dev server reads its policy from (the agent sets them for its built-in servers; a standalone
# server gets them from its config's `env`). Paths lists are separated by os.pathsep.
MODE_ENV = "SPROUT_DEV_SANDBOX"  # off | read-only | workspace-write (default) | required (= workspace-write, must work)
REQUIRED_ENV = "SPROUT_DEV_SANDBOX_REQUIRED"  # 1: refuse to run a command when the sandbox cannot work
NETWORK_ENV = "SPROUT_DEV_SANDBOX_NETWORK"  # on (default for workspace-write) | off; read-only is always off
ALLOW_WRITE_ENV = "SPROUT_DEV_SANDBOX_ALLOW_WRITE"
DENY_READ_ENV = "SPROUT_DEV_SANDBOX_DENY_READ"
HELPER_ENV = "SPROUT_DEV_SANDBOX_BWRAP"  # the bwrap binary; default: bwrap on PATH
MECHANISM_ENV = "SPROUT_DEV_SANDBOX_MECHANISM"  # auto (default: bubblewrap, else Landlock) | bubblewrap | landlock
MECHANISMS = ("auto", BWRAP, LANDLOCK)

# Sockets that act for the user outside (a read-only bind stops no connect): agents, bus, docker, warm interpreter.
_AGENT_SOCKET_VARS = frozenset({"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST"})
HIDDEN_SOCKETS = ("/run/user/{uid}", "/var/run/docker.sock", "/run/docker.sock", "/run/dbus/system_bus_socket")

# Hidden from commands in every mode but off: where credentials usually live. `~` is the command's HOME.
DENY_READ = (
    "~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker/config.json",
    "~/.config/gh", "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.pypirc", "~/.password-store",
    "~/.local/share/keyrings", "~/.config/sprout-agent",
    # Shell start-up files: where people export API keys (non-interactive `bash -c` does not read them).
    "~/.bashrc", "~/.bash_profile", "~/.profile", "~/.zshrc", "~/.zprofile", "~/.zshenv", "~/.config/fish",
)  # fmt: skip
PROBE_TIMEOUT = 5.0
# Run as root, bwrap keeps root's capabilities inside: with CAP_SYS_ADMIN a command could unmount the read-only
# binds and the deny list. Dropped, the mounts hold for root too.
_NO_CAPS = ("--cap-drop", "ALL")
# Result `_meta`: what the sandbox stopped (the agent may offer to re-run the call outside it). Request
# `_meta`: run this call outside the sandbox (sent only by the agent, after a person said yes to that).
SANDBOX_DENIED_META = "sprout-agent/sandbox-denied"
OUTSIDE_SANDBOX_META = "sprout-agent/outside-sandbox"


class SandboxUnavailable(Exception):
    """The policy requires the sandbox and it cannot work here."""


@dataclass(frozen=True, slots=True)
class Policy:
    """What commands may do; `root` is the working directory."""

    mode: str = WORKSPACE_WRITE
    network: bool = True
    root: str = "/"
    allow_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()  # beyond DENY_READ
    required: bool = False
    helper: str | None = None  # None = bwrap on PATH
    mechanism: str = "auto"  # MECHANISMS

    @classmethod
    def from_env(cls, env: Mapping[str, str], root: str) -> Policy:
        """The policy the SPROUT_DEV_SANDBOX* variables in `env` describe; ValueError on a bad value."""
        mode = env.get(MODE_ENV, "").strip().lower() or WORKSPACE_WRITE
        required = env_flag(env, REQUIRED_ENV) or mode == REQUIRED
        mode = WORKSPACE_WRITE if mode == REQUIRED else mode
        if mode not in MODES:
            raise ValueError(f"{MODE_ENV} must be one of off, read-only, workspace-write, required; got {mode!r}")
        network = env.get(NETWORK_ENV, "").strip().lower() or "on"
        if network not in ("on", "off"):
            raise ValueError(f"{NETWORK_ENV} must be on or off, got {network!r}")
        mechanism = env.get(MECHANISM_ENV, "").strip().lower() or "auto"
        if mechanism not in MECHANISMS:
            raise ValueError(f"{MECHANISM_ENV} must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
        return cls(
            mode=mode,
            network=network == "on" and mode == WORKSPACE_WRITE,
            root=os.path.realpath(root),
            allow_write=_paths(env.get(ALLOW_WRITE_ENV, "")),
            deny_read=_paths(env.get(DENY_READ_ENV, "")),
            required=required,
            helper=env.get(HELPER_ENV),
            mechanism=mechanism,
        )

    def to_env(self) -> dict[str, str]:
        """The variables that give a dev server this policy (the inverse of `from_env`, root aside)."""
        return {
            MODE_ENV: self.mode,
            REQUIRED_ENV: "1" if self.required else "",
            NETWORK_ENV: "on" if self.network else "off",
            ALLOW_WRITE_ENV: os.pathsep.join(self.allow_write),
            DENY_READ_ENV: os.pathsep.join(self.deny_read),
            **({HELPER_ENV: self.helper} if self.helper is not None else {}),
            MECHANISM_ENV: self.mechanism,
        }

    def describe(self) -> str:
        """One phrase for people and the model: "workspace-write, network on"."""
        return OFF if self.mode == OFF else f"{self.mode}, network {'on' if self.network else 'off'}"


def _paths(value: str) -> tuple[str, ...]:
    return tuple(os.path.realpath(os.path.expanduser(p)) for p in value.split(os.pathsep) if p.strip())


def helper_path(helper: str | None, untrusted: tuple[str, ...] = ()) -> str | None:
    """The bwrap binary: `helper`, or the first on PATH outside `untrusted` (the writable roots: a sandboxed
    command could put a fake `bwrap` there, which would run every later command unsandboxed)."""
    if helper is not None:
        return helper if os.path.isfile(helper) and os.access(helper, os.X_OK) else None
    return trusted_which("bwrap", untrusted)


def trusted_which(name: str, untrusted: tuple[str, ...]) -> str | None:
    """`shutil.which(name)` over the PATH entries that are not inside an `untrusted` directory (what sandboxed
    commands may write): the tools run what this finds outside the sandbox. A relative entry (`.`, or an empty
    one) is never searched: it names whatever directory we run in, where a model or a repository puts files."""
    entries = [e for e in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(e)]
    kept = [e for e in entries if not any(under(os.path.realpath(e), root) for root in untrusted)]
    return shutil.which(name, path=os.pathsep.join(kept)) if kept else None


def choose(helper: str | None = None, wanted: str = "auto") -> tuple[str | None, str | None]:
    """The mechanism commands run under here (bubblewrap, else Landlock, else None; or only the one `wanted`)
    and why bubblewrap is not it (None when it is)."""
    problem = probe(helper) if wanted != LANDLOCK else f"{MECHANISM_ENV}={LANDLOCK}"
    if problem is None:
        return BWRAP, None
    if wanted == BWRAP:
        return None, problem
    if _landlock.abi() >= 1:
        return LANDLOCK, problem
    return None, f"{problem}; no Landlock in this kernel either" if wanted == "auto" else "no Landlock in this kernel"


def probe(helper: str | None = None) -> str | None:
    """None when bubblewrap works here; otherwise why not, in a few words."""
    if not sys.platform.startswith("linux"):
        return f"no sandbox for {sys.platform} yet (Linux with bubblewrap only)"
    path = helper_path(helper)
    if path is None:
        return f"{helper} is not an executable file" if helper else "bubblewrap (bwrap) is not installed"
    return _try(path)


@functools.cache
def _try(path: str) -> str | None:
    """Runs the helper once with every namespace a command gets (cached: the answer does not change)."""
    argv = [
        path,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--unshare-net",
        *_NO_CAPS,
    ]
    try:
        done = subprocess.run([*argv, "true"], capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{path} does not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{path} cannot create namespaces here: {why[-1] if why else f'exit {done.returncode}'}"
    return None


@dataclass
class Sandbox:
    """One server's sandbox: the policy, whether it works (probed once), and its private temp directory."""

    policy: Policy = field(default_factory=lambda: Policy(mode=OFF))
    _checked: bool = False
    _unavailable: str | None = None
    _mechanism: str | None = None
    _tmp: str | None = None
    _hidden: tuple[str, ...] = ()  # as of the last command
    _deny_lists: dict[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])  # by home

    def unavailable(self) -> str | None:
        """Why commands cannot be sandboxed (None: they are, or the mode is off)."""
        if self.policy.mode == OFF:
            return None
        if not self._checked:
            self._mechanism, why = choose(self.policy.helper, self.policy.mechanism)
            self._unavailable, self._checked = (why if self._mechanism is None else None), True
        return self._unavailable

    def mechanism(self) -> str | None:
        """bubblewrap or landlock while the sandbox is active; None otherwise."""
        return self._mechanism if self.active() else None

    def active(self) -> bool:
        return self.policy.mode != OFF and self.unavailable() is None

    def writable(self) -> tuple[str, ...]:
        """Where commands may write, besides the private /tmp."""
        return self.write_policy().roots if self.policy.mode == WORKSPACE_WRITE else ()

    def write_policy(self) -> WritePolicy:
        """The write policy commands follow (the write tools follow the same one: trust/workspace.py); the deny
        list is hidden with its own mounts."""
        policy = self.policy
        return WritePolicy.build(mode=policy.mode, root=policy.root, allow_write=policy.allow_write)

    def deny_list(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """Every path the deny list names, existing or not (the write tools may not create one either); kept
        per home directory: resolving two dozen paths on every write would double the write tools' cost."""
        home = env.get("HOME") or os.path.expanduser("~")
        known = self._deny_lists.get(home)
        if known is None:
            named = [os.path.join(home, p[2:]) for p in DENY_READ] + list(self.policy.deny_read)
            named += [*(p.format(uid=os.getuid()) for p in HIDDEN_SOCKETS), *hidden_from_commands(env)]
            known = self._deny_lists[home] = tuple(os.path.realpath(p) for p in named)
        return known

    def hidden(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """The deny list's existing paths, as mounts can cover them."""
        real = (p for p in self.deny_list(env) if os.path.lexists(p))
        # Never one holding the working directory: the command would start in an empty tmpfs.
        kept = list(dict.fromkeys(p for p in real if not under(self.policy.root, p)))
        # Nor one inside another: it has no mount point in the empty tmpfs over its parent (and is hidden anyway).
        return tuple(p for p in kept if not any(q != p and under(p, q) for q in kept))

    def wrap(self, argv: list[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run `argv` inside the sandbox (unchanged when it is off or
        unavailable); SandboxUnavailable when the policy requires a sandbox that cannot work."""
        why = self.unavailable()
        if self.policy.mode == OFF or (why is not None and not self.policy.required):
            return argv, dict(env)
        if why is not None:
            raise SandboxUnavailable(f"sandbox required but unavailable: {why}; the command did not run")
        # The agents and sockets that act for the user outside the sandbox (keys, session bus) are not passed on.
        kept = {k: v for k, v in env.items() if k not in _AGENT_SOCKET_VARS}
        if self._mechanism == LANDLOCK:
            return with_operands(self._landlock(), argv), {**kept, "TMPDIR": self._private_tmp()}
        helper = helper_path(self.policy.helper, self.writable())
        if helper is None:  # only a bwrap inside a writable root is left: never trusted
            raise SandboxUnavailable("no trusted bwrap outside the writable roots; the command did not run")
        return with_operands([helper, *self._mounts(env)], argv), {**kept, "TMPDIR": "/tmp"}

    def _landlock(self) -> list[str]:
        writable = self.writable()
        python = _landlock.interpreter()
        if any(under(python, root) for root in writable):  # a command could replace it: never trusted
            raise SandboxUnavailable(f"the interpreter {python} is inside a writable root; the command did not run")
        # No private /tmp without a mount namespace, and a working directory may lie under /tmp (a CI clone):
        # only the private TMPDIR is writable there.
        return _landlock.launcher((*writable, self._private_tmp()), self.policy.network)

    def _mounts(self, env: Mapping[str, str]) -> list[str]:
        args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", self._private_tmp(), "/tmp"]
        # Programs on PATH that live under the host's /tmp (a venv or a tool prefix: its bin/ with the lib/
        # beside it) stay visible, read-only; first, so a writable root inside one is bound over it.
        visible = _path_prefixes_under_tmp(env.get("PATH", ""), self._private_tmp())
        for prefix in visible:
            args += ["--ro-bind", prefix, prefix]
        writes = self.write_policy()
        writable = writes.roots if self.policy.mode == WORKSPACE_WRITE else ()
        for root in writable:
            args += ["--bind", root, root]
        for path in writes.git if writable else ():  # after the binds: read-only over them (only what exists:
            if os.path.lexists(path):  # a hooksPath not made yet has no mount point; the write tools refuse it)
                args += ["--ro-bind", path, path]
        visible += writable
        for root in (self.policy.root, git_root(self.policy.root)):  # visible even when under the private /tmp
            if root is not None and root not in writable and under(root, "/tmp"):
                args += ["--ro-bind", root, root]
                visible.append(root)
        # Under /tmp only what a root brought back is visible: the rest is hidden already (and has no mount point).
        self._hidden = tuple(
            p for p in self.hidden(env) if not under(p, "/tmp") or any(under(p, root) for root in visible)
        )
        for path in self._hidden:
            args += ["--tmpfs", path, "--remount-ro", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
        args += ["--unshare-pid", "--die-with-parent", *_NO_CAPS, "--chdir", self.policy.root]
        return args if self.policy.network else [*args, "--unshare-net"]

    def _private_tmp(self) -> str:
        if self._tmp is None or not os.path.isdir(self._tmp):
            self._tmp = tempfile.mkdtemp(prefix="sprout-sandbox-")
            weakref.finalize(self, shutil.rmtree, self._tmp, True)  # at exit, or when the server is dropped
        return self._tmp

    def tmp_note(self, command: str) -> str:
        """A note for a command that names /tmp under bubblewrap: its /tmp is the sandbox's own, so a file written
        there is not where a person (or a later command outside the sandbox) would look."""
        if self._mechanism != BWRAP or not self.active():
            return ""
        roots = (*self.writable(), self.policy.root)  # a workspace under /tmp is itself, not the private /tmp
        if not any(not any(under(path, root) for root in roots) for path in NAMES_TMP.findall(command)):
            return ""
        return "\n[note: /tmp in this command is the sandbox's private /tmp (kept between commands), not the host's]"

    def explain(self, output: str, returncode: int | None) -> str:
        """A note for a failed command's result: what the sandbox stopped, or the limits in force."""
        if returncode in (0, None) or not self.active():
            return ""
        stopped = self.stopped(output, returncode)
        hidden = "" if self._mechanism == LANDLOCK else "; credential directories such as ~/.ssh are hidden"
        general = f"{self._limits()}{hidden}; if the sandbox stopped this, say so"
        return f"\n[{stopped or general}]"

    def stopped(self, output: str, returncode: int | None) -> str | None:
        """What the sandbox stopped in a failed command ("sandbox: …"), or None when nothing says it did."""
        if returncode in (0, None) or not self.active():
            return None
        limits = self._limits()
        denied = self._denied_write(output)
        if denied is not None and any(under(denied, git) for git in self.write_policy().git):
            return f"sandbox: the git directory is read-only: {denied} (`--sandbox-allow-write .git` makes it writable)"
        if denied is not None:
            return f"sandbox: write outside the writable roots denied: {denied} ({limits})"
        hidden = next((path for path in self._hidden if path in output), None)
        if hidden is not None:
            return f"sandbox: {hidden} is hidden from commands (a deny-listed credential path; {limits})"
        landlock_tcp = self._mechanism == LANDLOCK and LANDLOCK_NO_TCP.search(output) is not None
        if not self.policy.network and (NO_NETWORK.search(output) or landlock_tcp):
            return f"sandbox: network disabled by the sandbox ({limits})"
        if output.startswith(("bwrap:", "sandbox (landlock):")):
            return f"sandbox: could not set up the sandbox for this command ({limits})"
        return None

    def _denied_write(self, output: str) -> str | None:
        if self._mechanism != LANDLOCK:
            denied = denied_write(output, DENIED_WRITE)
            relative = denied is not None and denied != "a path" and not denied.startswith("/")
            return os.path.normpath(os.path.join(self.policy.root, denied)) if relative and denied else denied
        # Landlock refuses with EACCES, which a file's own mode gives too: named only for a path outside the roots.
        denied = denied_write(output, LANDLOCK_DENIED)
        if denied is None or not denied.startswith("/") or any(under(denied, r) for r in self.writable()):
            return None
        return denied

    def _limits(self) -> str:
        writable = ", ".join(self.writable()) or "nothing"
        if self._mechanism == LANDLOCK:
            return f"sandbox {self.policy.describe()} (landlock); writable: {writable} and a private TMPDIR (not /tmp)"
        return f"sandbox {self.policy.describe()}; writable: {writable} and a private /tmp"


def _path_prefixes_under_tmp(path: str, private: str) -> list[str]:
    """The PATH directories under /tmp, each as its prefix (the parent of a `bin`), outermost ones only."""
    found: list[str] = []
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not under(entry, "/tmp") or under(entry, private):
            continue
        prefix = os.path.dirname(entry.rstrip("/")) if os.path.basename(entry.rstrip("/")) == "bin" else entry
        if prefix not in ("/tmp", "/") and os.path.isdir(prefix) and not any(under(prefix, f) for f in found):
            found = [f for f in found if not under(f, prefix)] + [prefix]
    return found
