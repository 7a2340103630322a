"""The sandbox a run asks for (`--sandbox*` flags, `SPROUT_AGENT_SANDBOX*`), decided once at start-up.

The mechanism is trust/sandbox.py (stdlib only, shared with the tools); this side picks the policy, probes once,
fails with exit 2 for `required` when it cannot work, and hands the policy to the built-in dev server as the
SPROUT_DEV_SANDBOX* variables of its config `env`: the same variables a standalone dev server reads.
The variables are read from the real environment only: a project's `.env` cannot loosen the sandbox.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sprout_agent.config.files import ServerConfig
from sprout_agent.core.errors import UsageError
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.trust import sandbox as sb
from sprout_agent.trust.opening import NOTHING_DENIED, DenyList

MODE_ENV = "SPROUT_AGENT_SANDBOX"
NETWORK_ENV = "SPROUT_AGENT_SANDBOX_NETWORK"
ALLOW_WRITE_ENV = "SPROUT_AGENT_SANDBOX_ALLOW_WRITE"
DENY_READ_ENV = "SPROUT_AGENT_SANDBOX_DENY_READ"
MECHANISM_ENV = "SPROUT_AGENT_SANDBOX_MECHANISM"
CHOICES = (*sb.MODES, sb.REQUIRED)
# Per sandbox, those that confine at least as much (what a narrower run, e.g. an `mcp serve` call, may ask for).
# `required` is workspace-write that must work, so only itself keeps that promise.
CONFINING_AS: dict[str, frozenset[str]] = {
    sb.OFF: frozenset(CHOICES),
    sb.WORKSPACE_WRITE: frozenset({sb.WORKSPACE_WRITE, sb.REQUIRED, sb.READ_ONLY}),
    sb.REQUIRED: frozenset({sb.REQUIRED}),
    sb.READ_ONLY: frozenset({sb.READ_ONLY}),
}
INSTALL_HINT = "install bubblewrap for the full sandbox: apt install bubblewrap"


@dataclass(frozen=True, slots=True)
class SandboxPlan:
    """The policy commands run under, and why it cannot work here (None: it works, or it is off)."""

    policy: sb.Policy
    unavailable: str | None = None
    mechanism: str | None = None  # bubblewrap or landlock when active
    why_not_bwrap: str | None = None  # set when Landlock stands in for bubblewrap

    @classmethod
    def off(cls) -> SandboxPlan:
        return cls(sb.Policy(mode=sb.OFF, network=True))

    @property
    def active(self) -> bool:
        return self.policy.mode != sb.OFF and self.unavailable is None

    def describe(self) -> str:
        """For the banner, /servers and mcp doctor: "workspace-write, network on", "off", "unavailable: …"."""
        if self.unavailable is not None:
            return f"unavailable ({self.unavailable}): commands run unsandboxed"
        if self.active and self.mechanism == sb.LANDLOCK:
            return f"{self.policy.describe()} (landlock: .git and ~/.ssh not protected from commands)"
        return self.policy.describe()

    def notice(self) -> str | None:
        """The one start-up line when a sandbox was wanted and cannot work, or works only in part."""
        if self.unavailable is not None:
            return (
                f"sandbox unavailable: {self.unavailable}; dev__bash commands run UNSANDBOXED: they can write "
                f"anywhere you can ({INSTALL_HINT}; --sandbox required refuses to run without a sandbox)"
            )
        if self.active and self.mechanism == sb.LANDLOCK:
            return (
                f"sandbox: {self.why_not_bwrap}; commands run under Landlock, which keeps their writes in the "
                "working directory and a private TMPDIR but cannot keep its .git read-only, hide ~/.ssh, stop unix "
                "sockets (an ssh agent, docker) or isolate processes; run as root it is weaker still "
                f"({INSTALL_HINT})"
            )
        return None

    def record(self) -> dict[str, object]:
        """The stream-json `init` field."""
        policy = self.policy
        return {
            "mode": policy.mode,
            "active": self.active,
            "required": policy.required,
            "network": policy.network if policy.mode != sb.OFF else True,
            "writable": list(sb.Sandbox(policy).writable()) if self.active else [],
            "unavailable": self.unavailable,
            "mechanism": self.mechanism if self.active else None,
        }

    def server_env(self) -> dict[str, str]:
        """The built-in dev server's config `env`."""
        return self.policy.to_env()

    def deny_list(self, environ: Mapping[str, str]) -> DenyList:
        """What the dev server's read refuses (trust/workspace.py), for what the agent reads itself for the model:
        skills, commands and agent definitions (none where the sandbox is off: bash reads anything then)."""
        if not self.active:
            return NOTHING_DENIED
        return DenyList.of(sb.Sandbox(self.policy).deny_list(environ), self.policy.root)


def plan(
    mode: str | None,
    network: str | None,
    allow_write: Sequence[Path],
    *,
    permission_mode: PermissionMode,
    cwd: Path,
    hidden: Sequence[Path],
    environ: Mapping[str, str],
    strict: bool = True,
) -> SandboxPlan:
    """Flags over the real environment; `--permission-mode read-only` narrows workspace-write to read-only.

    `required` is workspace-write (or read-only, under --permission-mode read-only) that must work: exit 2
    (`strict=False`, for mcp doctor: reported in `unavailable` instead)."""
    value = asked_mode(mode, environ)
    required = value == sb.REQUIRED
    chosen = sb.WORKSPACE_WRITE if required else value
    if permission_mode.ours is PermissionMode.READ_ONLY and chosen == sb.WORKSPACE_WRITE:  # plan is read-only too
        chosen = sb.READ_ONLY
    net = (network or environ.get(NETWORK_ENV, "").strip() or "on").lower()
    if net not in ("on", "off"):
        raise UsageError(f"--sandbox-network / {NETWORK_ENV} must be on or off, got {net!r}")
    mechanism = environ.get(MECHANISM_ENV, "").strip().lower() or "auto"
    if mechanism not in sb.MECHANISMS:
        raise UsageError(f"{MECHANISM_ENV} must be one of {', '.join(sb.MECHANISMS)}, got {mechanism!r}")
    allowed = [*allow_write, *_paths(environ.get(ALLOW_WRITE_ENV, ""))]
    for path in allowed:
        if not (cwd / path).is_dir():
            where = f"--sandbox-allow-write, {ALLOW_WRITE_ENV} or a config file's sandbox.allowWrite"
            raise UsageError(f"sandbox allow-write path {path} ({where}): not a directory")
    policy = sb.Policy(
        mode=chosen,
        network=net == "on" and chosen == sb.WORKSPACE_WRITE,
        root=os.path.realpath(cwd),
        allow_write=tuple(os.path.realpath(cwd / path) for path in allowed),
        deny_read=tuple(os.path.realpath(p) for p in (*hidden, *_paths(environ.get(DENY_READ_ENV, "")))),
        required=required,
        helper=environ.get(sb.HELPER_ENV),
        mechanism=mechanism,
    )
    working, why_not_bwrap = sb.choose(policy.helper, mechanism) if chosen != sb.OFF else (None, None)
    unavailable = why_not_bwrap if chosen != sb.OFF and working is None else None
    if strict and required and unavailable is not None:
        raise UsageError(f"--sandbox required, but the sandbox cannot work here: {unavailable} ({INSTALL_HINT})")
    return SandboxPlan(policy, unavailable, working, why_not_bwrap)


def asked_mode(mode: str | None, environ: Mapping[str, str]) -> str:
    """The sandbox asked for (one of CHOICES): the flag, else SPROUT_AGENT_SANDBOX, else workspace-write."""
    value = (mode or environ.get(MODE_ENV, "").strip() or sb.WORKSPACE_WRITE).lower()
    if value not in CHOICES:
        raise UsageError(f"--sandbox / {MODE_ENV} must be one of {', '.join(CHOICES)}, got {value!r}")
    return value


def _paths(value: str) -> list[Path]:
    return [Path(os.path.expanduser(part)) for part in value.split(os.pathsep) if part.strip()]


class ServerSandboxes:
    """Stdio MCP servers whose config asks for a sandbox (`"sandbox": "workspace-write"`, ours) start inside one.

    Each gets the run's network setting, writable roots (its own cwd, that directory's git root, the run's
    allow-write paths) and deny list, in the stricter of its own mode and the run's: `--permission-mode
    read-only` narrows it to read-only, and `--sandbox off` (or a sandbox that cannot work here, as the
    start-up notice says) runs it unsandboxed, as every other server. Holds each server's sandbox (and so its
    private /tmp) for the run's life.
    """

    def __init__(self, plan: SandboxPlan, cwd: Path) -> None:
        self.plan = plan
        self.cwd = cwd
        self._live: list[sb.Sandbox] = []

    def wrap(self, config: ServerConfig, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        if config.sandbox is None or not self.plan.active:
            return argv, env
        session = self.plan.policy
        mode = sb.READ_ONLY if sb.READ_ONLY in (config.sandbox, session.mode) else sb.WORKSPACE_WRITE
        root = os.path.realpath(self.cwd / config.cwd) if config.cwd is not None else session.root
        if not sb.under(root, session.root):
            # Its cwd becomes a writable root: a project's `"cwd": "/"` would make everything writable.
            raise OSError(errno.EPERM, f"a sandboxed server's cwd must be inside the working directory, not {root}")
        policy = replace(session, mode=mode, network=session.network and mode == sb.WORKSPACE_WRITE, root=root)
        sandbox = sb.Sandbox(policy)
        self._live.append(sandbox)
        return sandbox.wrap(argv, env)


def server_notices(plan: SandboxPlan, servers: Sequence[ServerConfig]) -> tuple[str, ...]:
    """A line for each server that asked for a sandbox it will not get."""
    if plan.unavailable is None:
        return ()
    return tuple(
        f"server '{server.name}' asks for a {server.sandbox} sandbox, which is unavailable here: it runs unsandboxed"
        for server in servers
        if server.sandbox is not None
    )
