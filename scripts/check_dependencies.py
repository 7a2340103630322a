"""Every package our code imports is declared in pyproject.toml: sprout_agent/ by [project.dependencies] (telemetry/
by the `telemetry` extra too, and each provider extra's one door by that extra: EXTRA_DOORS), tests/, scripts/ and
examples/ by those and the `dev` extra. A package that only arrives through another's dependencies (jsonschema's
`referencing`) can go away in that one's next release.

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
# Imported only by code that runs under another interpreter than .venv's, which declares and installs them itself.
ELSEWHERE = {
    "harbor": "the harbor virtualenv (Python >= 3.12, .ci/run): tests/harbor_drive.py and examples/harbor/ run there",
    "sprout_harbor": "examples/harbor/sprout_harbor.py, imported by tests/harbor_drive.py in the harbor virtualenv",
}


# A module that imports an optional provider SDK itself (only when that provider is chosen), by the extra that
# declares it. Anywhere else in sprout_agent/ that SDK is undeclared. (Bedrock's and Vertex's SDKs are imported by
# the anthropic SDK's own clients, not by our code.)
EXTRA_DOORS = {"sprout_agent/model/entra.py": "foundry"}


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


def undeclared(place: str, declared: set[str], providers: Mapping[str, list[str]]) -> Iterator[str]:
    """Each import under `place` (a folder, or one file) of a package `declared` does not name."""
    for path in [ROOT / place] if place.endswith(".py") else sorted((ROOT / place).rglob("*.py")):
        for module, line in imported(path):
            if module in sys.stdlib_module_names or module in OURS or module in ELSEWHERE or local(module, path):
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
    doors = tuple(EXTRA_DOORS)
    problems = [
        *(
            p
            for p in undeclared("sprout_agent", runtime, providers)
            if not p.startswith(("sprout_agent/telemetry/", *(f"{door}:" for door in doors)))
        ),
        *undeclared("sprout_agent/telemetry", telemetry, providers),
        *(
            p
            for door, extra in EXTRA_DOORS.items()
            for p in undeclared(door, runtime | requirement_names(extras.get(extra, []), extras), providers)
        ),
        *(p for folder in ("tests", "scripts", "examples") for p in undeclared(folder, dev, providers)),
    ]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
