"""The anthropic SDK's packages loaded lazily: a package whose `__init__.py` only re-exports its submodules' names
is bound without running it, the top-level package runs all but the re-exports nothing else in it reads, and each
name is imported from its submodule on first use (PEP 562), so a run loads what its requests use."""

from __future__ import annotations
import __future__

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import TypeGuard

# The SDK's generated `__init__.py` files, statement by statement: what may be skipped is exactly these. Anything
# else in a file (a conditional, a call, a comment after code) makes its package load as it always did.
_FUTURE = re.compile(r"^from __future__ import annotations\n", re.M)
_DOCSTRING = re.compile(r'\A"""(?:[^"\\]|\\.|"(?!""))*"""\n')
_COMMENT = re.compile(r"^#[^\n]*\n", re.M)
_RE_EXPORT = re.compile(r"^from (\.[\w.]*) import (?:\(([^)]*)\)|([^\n(#]*))\n", re.M)
_ALL = re.compile(r"^__all__ = \[([^\]]*)\]\n", re.M)
_ITEM = re.compile(r"(\w+)(?:\s+as\s+(\w+))?")
_STRING = re.compile(r'"(\w+)"')

_lock = threading.Lock()
_installed: set[str] = set()


class Exports:
    """What a re-exporting `__init__.py` binds: each name's submodule (relative) and attribute there, and the
    names `from package import *` gives."""

    def __init__(self, names: dict[str, tuple[str, str]], star: list[str], future: bool) -> None:
        self.names = names
        self.star = star
        self.future = future  # `from __future__ import annotations` binds `annotations` in the package
        self.submodules = frozenset(
            attribute if relative == "." else relative[1:].split(".")[0] for relative, attribute in names.values()
        )


def exports(source: str) -> Exports | None:
    """`source` read as re-exports only; None when it holds anything else (then it runs as usual)."""
    future = _FUTURE.search(source) is not None
    body = _COMMENT.sub("", _FUTURE.sub("", _DOCSTRING.sub("", source)))
    listed = _ALL.findall(body)
    if _ALL.sub("", _RE_EXPORT.sub("", body)).strip() or len(listed) > 1:
        return None
    names: dict[str, tuple[str, str]] = {}
    for statement in _RE_EXPORT.finditer(body):
        for item in (statement.group(2) or statement.group(3)).split(","):
            if not item.strip():
                continue
            if (found := _ITEM.fullmatch(item.strip())) is None:
                return None
            names[found.group(2) or found.group(1)] = (statement.group(1), found.group(1))
    exported = Exports(names, [], future)
    if listed:
        if _STRING.sub("", listed[0]).replace(",", "").strip():
            return None
        exported.star = _STRING.findall(listed[0])
    else:  # no __all__: a star import takes every public name the file bound, its submodules' included
        bound = {*names, *exported.submodules, *(["annotations"] if future else [])}
        exported.star = sorted(name for name in bound if not name.startswith("_"))
    return exported


def resolver(module: ModuleType, exported: Exports) -> Callable[[str], object]:
    """The package's `__getattr__`: a re-exported name from its submodule (then bound, as the file would have),
    a submodule the file imports, or the AttributeError the package would raise."""

    def getattr_(name: str) -> object:
        if (found := exported.names.get(name)) is not None:
            relative, attribute = found
            if relative == ".":  # `from . import x`: the submodule
                value = importlib.import_module(f"{module.__name__}.{attribute}")
            else:
                source = importlib.import_module(relative, module.__name__)
                try:
                    value = getattr(source, attribute)
                except AttributeError:  # `from .x import y` where y is a submodule of x, as `from` would find it
                    value = importlib.import_module(f"{source.__name__}.{attribute}")
            setattr(module, name, value)
            return value
        # A submodule the file imports, or one another module imported (an attribute of the package by then)
        if name in exported.submodules or (
            not name.startswith("__") and importlib.util.find_spec(f"{module.__name__}.{name}") is not None
        ):
            return importlib.import_module(f"{module.__name__}.{name}")
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    return getattr_


# Calls through which code reads the module's names by string: kept code making one reads every name `__all__`
# lists (the SDK's top level sets each one's `__module__` through `locals()`), so those names stay bound eagerly.
_DYNAMIC = frozenset({"locals", "globals", "vars", "dir", "eval", "exec"})


class Split:
    """A top-level `__init__.py` in two: the re-exports nothing else in it reads, bound lazily, and every other
    statement, compiled to run in order. `late`: lazy names a star import run before them may bind too."""

    def __init__(self, exported: Exports, code: CodeType, late: frozenset[str]) -> None:
        self.exported = exported
        self.code = code
        self.late = late


def split(source: str, origin: str) -> Split | None:
    """`source` (a package's `__init__.py` at `origin`) split; None when it runs whole: nothing in it can be
    deferred, or which names it reads cannot be known without running it."""
    body = ast.parse(source, origin).body
    found = [_reexport(statement, Path(origin).parent) for statement in body]
    lazy = [names is not None for names in found]
    while True:  # a re-export kept eager binds its names early, which may keep another eager: to a fixed point
        kept = [statement for statement, deferred in zip(body, lazy, strict=True) if not deferred]
        if (listed := _listed(kept)) is None or (used := _used(kept, listed)) is None:
            return None  # without `__all__`, `from package import *` would miss the names bound lazily
        stars = [index for index, statement in enumerate(body) if not lazy[index] and _is_star(statement)]
        eager = [
            index
            for index, names in enumerate(found)
            if lazy[index] and names is not None and (names.keys() & used or _between(stars, index))
        ]
        if not eager:
            break
        for index in eager:
            lazy[index] = False
    deferred = [(index, names) for index, names in enumerate(found) if lazy[index] and names is not None]
    if not deferred:
        return None
    exported = Exports({name: where for _, names in deferred for name, where in names.items()}, [], False)
    late = frozenset(name for index, names in deferred if stars and stars[0] < index for name in names)
    code = compile(ast.Module(body=kept, type_ignores=[]), origin, "exec", dont_inherit=True)
    return Split(exported, code, late)


def _reexport(statement: ast.stmt, folder: Path) -> dict[str, tuple[str, str]] | None:
    """The names a `from .x import …` statement binds, each with its submodule and attribute there; None for any
    other statement, and for a star import from a package whose names cannot be read without running it."""
    if not isinstance(statement, ast.ImportFrom) or statement.level != 1:
        return None
    relative = "." + (statement.module or "")
    if not _is_star(statement):
        return {alias.asname or alias.name: (relative, alias.name) for alias in statement.names}
    *parents, last = (statement.module or "").split(".")
    spec = importlib.machinery.PathFinder.find_spec(last, [str(folder.joinpath(*parents))]) if last else None
    exported = exports(source) if spec is not None and (source := package_source(spec)) is not None else None
    return None if exported is None else {name: (relative, name) for name in exported.star}


def _is_star(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and [alias.name for alias in statement.names] == ["*"]


def _between(stars: list[int], index: int) -> bool:
    """Star imports run before and after statement `index`: which of them binds a name last is known only then."""
    return any(star < index for star in stars) and any(star > index for star in stars)


def _used(kept: list[ast.stmt], listed: set[str]) -> set[str] | None:
    """The names the kept statements read or bind (a lazy name must be neither), those `__all__` lists among them
    if they read names by string; None if they define the module's hooks."""
    used: set[str] = set()
    for node in (node for statement in kept for node in ast.walk(statement)):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.alias):
            used.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            used.add(node.name)
    if used & {"__getattr__", "__dir__"}:
        return None
    return used | listed if used & _DYNAMIC else used


def _listed(kept: list[ast.stmt]) -> set[str] | None:
    """The strings of the one `__all__ = [...]` statement; None if `__all__` is bound or changed anywhere else."""
    nodes = [node for statement in kept for node in ast.walk(statement)]
    touched = [node for node in nodes if _is_all(node) and not isinstance(node.ctx, ast.Load)]
    touched += [node for node in nodes if isinstance(node, ast.Attribute) and _is_all(node.value)]  # .extend(…)
    assigned = [node for node in kept if isinstance(node, ast.Assign) and [*map(_is_all, node.targets)] == [True]]
    if len(touched) != 1 or len(assigned) != 1 or not isinstance(value := assigned[0].value, (ast.List, ast.Tuple)):
        return None
    strings = [item.value for item in value.elts if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return set(strings) if len(strings) == len(value.elts) else None


def _is_all(node: ast.AST) -> TypeGuard[ast.Name]:
    return isinstance(node, ast.Name) and node.id == "__all__"


class _Loader(importlib.abc.Loader):
    def __init__(self, exported: Exports) -> None:
        self._exported = exported

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module, with the spec's __path__, __file__ and __spec__

    def exec_module(self, module: ModuleType) -> None:
        exported = self._exported
        namespace = vars(module)
        namespace["__getattr__"] = resolver(module, exported)
        namespace["__dir__"] = lambda: sorted({*namespace, *exported.names, *exported.submodules})
        namespace["__all__"] = exported.star
        if exported.future:
            namespace["annotations"] = __future__.annotations


class _SplitLoader(importlib.abc.Loader):
    def __init__(self, found: Split) -> None:
        self._split = found

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exported = self._split.exported
        namespace = vars(module)
        namespace["__getattr__"] = resolver(module, exported)
        namespace["__dir__"] = lambda: sorted({*namespace, *exported.names, *exported.submodules})
        exec(self._split.code, namespace)  # the package's own statements, from its own file
        for name in self._split.late & namespace.keys():  # bound by an earlier star import: the re-export wins
            del namespace[name]


def package_source(spec: importlib.machinery.ModuleSpec) -> str | None:
    """A package's `__init__.py` as the import system would read it to run it; None for a plain module or one
    without source."""
    if spec.submodule_search_locations is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
        return None
    try:
        return spec.loader.get_source(spec.name)
    except (ImportError, OSError, UnicodeDecodeError):
        return None


class LazyPackages(importlib.abc.MetaPathFinder):
    """Finds `package` and its modules as the path finder does, with a lazy loader for each re-exporting package
    and a split one for `package` itself."""

    def __init__(self, package: str) -> None:
        self._package = package

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname == self._package
        if not top and (not fullname.startswith(self._package + ".") or path is None):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or (source := package_source(spec)) is None:
            return spec  # a plain module (or no source): the spec the path finder gives, found once
        if (exported := exports(source)) is not None:
            spec.loader = _Loader(exported)
        elif top and (found := split(source, spec.origin or "")) is not None:
            spec.loader = _SplitLoader(found)
        return spec


def install(package: str = "anthropic") -> None:
    """Before `package` is first imported: it and its subpackages load lazily from then on (once imported, it
    stays as it was loaded). Idempotent."""
    with _lock:
        if package in _installed or package in sys.modules:
            return
        _installed.add(package)
        sys.meta_path.insert(0, LazyPackages(package))
