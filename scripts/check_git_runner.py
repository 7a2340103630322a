"""scripts/check step: only sprout_agent/trust/git_runner.py starts git (docs/security.md, "Git the agent runs
itself"). Fails on any other module that names git as a program: a list or tuple starting with "git", a lookup of
it (`which("git")`, `trusted_which("git", ...)`, `.program("git")`), or a process started (subprocess, os.exec*,
os.spawn*, os.system, anyio.run_process, asyncio.create_subprocess_*, pty.spawn) whose arguments hold "git" or a
shell string running it, directly or through a name assigned one in the same module. Usage: [PATH ...]
(default sprout_agent); exit 1 and one line per finding when any is found."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNER = Path("sprout_agent/trust/git_runner.py")
STARTERS = frozenset(
    {f"subprocess.{name}" for name in ("run", "Popen", "call", "check_call", "check_output", "getoutput",
                                        "getstatusoutput")}
    | {f"os.{name}" for name in ("system", "popen", "posix_spawn", "posix_spawnp")}
    | {f"os.exec{suffix}" for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")}
    | {f"os.spawn{suffix}" for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")}
    | {"anyio.run_process", "anyio.open_process", "asyncio.create_subprocess_exec",
       "asyncio.create_subprocess_shell", "pty.spawn"}
)  # fmt: skip
LOOKUPS = frozenset({"which", "trusted_which", "program"})
# git as a word a shell would run: at the start, or after a separator, a space or a quote.
SHELL_GIT = re.compile(r"(?:^|[\s;&|(`'\"])git(?:\s|$)")


def is_program(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.rsplit("/", 1)[-1] == "git"


def runs_git_text(node: ast.AST) -> bool:
    """A string (or an f-string's literal start) that names git as a program or a shell would run it."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(SHELL_GIT.search(node.value))


def aliases(tree: ast.Module) -> dict[str, str]:
    """Local name → dotted name it imports (`import subprocess as sp`, `from os import execvp`)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:  # `import os.path` binds `os`; `import os.path as p` binds the module itself
                found[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    return found


def dotted(node: ast.AST, names: dict[str, str]) -> str:
    if isinstance(node, ast.Name):
        return names.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value, names)}.{node.attr}"
    return ""


def assigned(tree: ast.Module) -> set[str]:
    """Names assigned, anywhere in the module, a value that names git as a program or runs it in a shell."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            git = runs_git_text(value) or is_program(value)
            git |= isinstance(value, ast.List | ast.Tuple) and bool(value.elts) and is_program(value.elts[0])
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {t.id for t in targets if git and isinstance(t, ast.Name)}
    return found


def findings(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    names, tainted = aliases(tree), assigned(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple) and node.elts and is_program(node.elts[0]):
            yield node.lineno, "a command line starting with git"
        elif isinstance(node, ast.Call):
            function = dotted(node.func, names)
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if function.rsplit(".", 1)[-1] in LOOKUPS and node.args and is_program(node.args[0]):
                yield node.lineno, f"{function}('git') looks git up"
            elif function in STARTERS and any(_runs_git(a, tainted) for a in arguments):
                yield node.lineno, f"{function} starts git"


def _runs_git(argument: ast.AST, tainted: set[str]) -> bool:
    return any(
        is_program(inner) or runs_git_text(inner) or (isinstance(inner, ast.Name) and inner.id in tainted)
        for inner in ast.walk(argument)
    )


def check(roots: list[Path]) -> list[str]:
    found: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            if path.resolve() == (ROOT / RUNNER).resolve():
                continue
            found += [f"{path}:{line}: {what}: start git through {RUNNER}" for line, what in findings(path)]
    return found


def main(argv: list[str]) -> int:
    found = check([Path(a) for a in argv] or [Path("sprout_agent")])
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
