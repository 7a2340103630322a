"""Finds import cycles among the modules of a package; exits 1 naming each one (run by scripts/check).

Usage: python scripts/import_cycles.py [PACKAGE_DIR] [--with-type-checking]   (default: sprout_agent)

Every `import` and `from … import` that names one of the package's modules is an edge, wherever it is:
at module level or inside a function (a lazy import runs too, only later, so it still closes a cycle).
Imports under `if TYPE_CHECKING:` never execute and are left out, unless --with-type-checking is given.
Importing a submodule also runs its packages' `__init__`; that implicit edge is not drawn (ours import
nothing). Read with `ast` only: nothing is imported.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_CYCLES_PER_GROUP = 20


@dataclass(frozen=True)
class Edge:
    target: str
    line: int
    lazy: bool  # inside a function body


class _Imports(ast.NodeVisitor):
    """The package-internal imports of one module, with where they are."""

    def __init__(self, module: str, is_package: bool, modules: set[str], with_type_checking: bool) -> None:
        self.module, self.is_package, self.modules = module, is_package, modules
        self.with_type_checking = with_type_checking
        self.edges: list[Edge] = []
        self._depth = 0

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test) and not self.with_type_checking:
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._resolve(node.module, node.level)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            self._add(submodule if submodule in self.modules else base, node.lineno)

    def _resolve(self, name: str | None, level: int) -> str:
        if level == 0:
            return name or ""
        parts = self.module.split(".")
        package = parts if self.is_package else parts[:-1]
        anchor = package[: len(package) - (level - 1)]
        return ".".join([*anchor, name] if name else anchor)

    def _add(self, target: str, line: int) -> None:
        edge = Edge(target, line, self._depth > 0)
        if target in self.modules and target != self.module and edge not in self.edges:
            self.edges.append(edge)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name → file, for every .py file of the package."""
    root = package_dir.parent
    files: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def import_graph(package_dir: Path, with_type_checking: bool) -> dict[str, list[Edge]]:
    files = module_files(package_dir)
    graph: dict[str, list[Edge]] = {}
    for module, path in files.items():
        visitor = _Imports(module, path.name == "__init__.py", set(files), with_type_checking)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        graph[module] = visitor.edges
    return graph


def strongly_connected(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; only the components that hold a cycle, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted({e.target for e in graph[start]})))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = _pop_component(stack, on_stack, node)
                    if len(component) > 1:
                        found.append(sorted(component))
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                on_stack.add(target)
                work.append((target, iter(sorted({e.target for e in graph[target]}))))
            elif target in on_stack:
                low[node] = min(low[node], index[target])
    return sorted(found)


def _pop_component(stack: list[str], on_stack: set[str], root: str) -> list[str]:
    component: list[str] = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == root:
            return component


def cycles_in(graph: dict[str, list[Edge]], component: list[str]) -> Iterator[list[str]]:
    """Each elementary cycle once, from its smallest module (a plain search: fine for a handful of modules)."""
    for start in component:
        yield from _paths_back(graph, start, [start], {m for m in component if m >= start})


def _paths_back(graph: dict[str, list[Edge]], start: str, path: list[str], allowed: set[str]) -> Iterator[list[str]]:
    for target in sorted({edge.target for edge in graph[path[-1]]} & allowed):
        if target == start:
            yield [*path, start]
        elif target not in path:
            yield from _paths_back(graph, start, [*path, target], allowed)


def describe(graph: dict[str, list[Edge]], cycle: list[str], prefix: str) -> str:
    """`a → b → a`, then where each import is (line, and whether it is lazy)."""
    names = [module.removeprefix(prefix) for module in cycle]
    steps = []
    for source, target in itertools.pairwise(cycle):
        where = [f"{e.line}{' (lazy)' if e.lazy else ''}" for e in graph[source] if e.target == target]
        steps.append(f"{source.removeprefix(prefix)} imports {target.removeprefix(prefix)} at line {', '.join(where)}")
    return " → ".join(names) + "\n      " + "; ".join(steps)


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/import_cycles.py", description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("package", nargs="?", default="sprout_agent", type=Path)
    parser.add_argument("--with-type-checking", action="store_true", help="count `if TYPE_CHECKING:` imports too")
    args = parser.parse_args()
    graph = import_graph(args.package.resolve(), args.with_type_checking)
    prefix = args.package.resolve().name + "."
    components = strongly_connected(graph)
    edges = [edge for module_edges in graph.values() for edge in module_edges]
    what = f"{len(graph)} modules, {len(edges)} imports ({sum(e.lazy for e in edges)} lazy)"
    guarded = "TYPE_CHECKING imports included" if args.with_type_checking else "TYPE_CHECKING imports left out"
    if not components:
        print(f"import cycles: none among {what}; {guarded}")
        return 0
    print(f"import cycles among {what}; {guarded}:", file=sys.stderr)
    for component in components:
        found = list(itertools.islice(cycles_in(graph, component), MAX_CYCLES_PER_GROUP + 1))
        for cycle in found[:MAX_CYCLES_PER_GROUP]:
            print(f"  {describe(graph, cycle, prefix)}", file=sys.stderr)
        if len(found) > MAX_CYCLES_PER_GROUP:
            print(f"  … and more among {', '.join(m.removeprefix(prefix) for m in component)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
