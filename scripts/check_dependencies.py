"""Every package our code imports is declared in pyproject.toml: sprout_agent/ by [project.dependencies] (telemetry/
by the `telemetry` extra too), tests/, scripts/ and examples/ by those and the `dev` extra. A package that only
arrives through another's dependencies (jsonschema's `referencing`) can go away in that one's next release.

Imports are read with ast, lazy ones and those under TYPE_CHECKING included; the installed distributions say
which package provides a module (importlib.metadata). Exit 1, naming file and module, for each undeclared one."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator, Mapping
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = {"sprout_agent", "tests", "scripts", "__future__"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(requirements: list[str], extras: dict[str, list[str]]) -> set[str]:
    """The distribution names of `requirements`, a self-reference (`sprout-agent[telemetry]`) expanded."""
    names: set[str] = set()
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", requirement)
        if match is None:
            continue
        name, wanted = normalized(match[1]), match[2]
        if name == "sprout-agent":
            for extra in (wanted or "").split(","):
                names |= requirement_names(extras.get(extra.strip(), []), extras)
        else:
            names.add(name)
    return names


def imported(path: Path) -> Iterator[tuple[str, int]]:
    """The top-level module of each absolute import in `path`, with its line."""
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name.partition(".")[0], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.partition(".")[0], node.lineno


def local(module: str, path: Path) -> bool:
    """A module beside the importing file (scripts/ run as scripts import their siblings)."""
    return (path.parent / f"{module}.py").exists() or (path.parent / module / "__init__.py").exists()


def undeclared(folder: str, declared: set[str], providers: Mapping[str, list[str]]) -> Iterator[str]:
    for path in sorted((ROOT / folder).rglob("*.py")):
        for module, line in imported(path):
            if module in sys.stdlib_module_names or module in OURS or local(module, path):
                continue
            given = {normalized(name) for name in providers.get(module, [])}
            if not given & declared:
                by = ", ".join(sorted(given)) or "not installed"
                yield f"{path.relative_to(ROOT)}:{line}: imports {module} ({by}), which is not declared"


def main() -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras: dict[str, list[str]] = project.get("optional-dependencies", {})
    runtime = requirement_names(project["dependencies"], extras)
    telemetry = runtime | requirement_names(extras.get("telemetry", []), extras)
    dev = telemetry | requirement_names(extras.get("dev", []), extras)
    providers = packages_distributions()
    problems = [
        *(p for p in undeclared("sprout_agent", runtime, providers) if not p.startswith("sprout_agent/telemetry/")),
        *undeclared("sprout_agent/telemetry", telemetry, providers),
        *(p for folder in ("tests", "scripts", "examples") for p in undeclared(folder, dev, providers)),
    ]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
