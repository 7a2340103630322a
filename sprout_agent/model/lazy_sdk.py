"""The anthropic SDK's packages loaded lazily: a package whose `__init__.py` only re-exports its submodules' names
is bound without running it, and each name is imported from its submodule on first use (PEP 562), so a run loads
the types its requests use rather than all ~3,300 modules of the SDK's type tree."""

from __future__ import annotations
import __future__

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType

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


class LazyPackages(importlib.abc.MetaPathFinder):
    """Finds `prefix`'s modules as the path finder does, with a lazy loader for each re-exporting package."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix + "."

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(self._prefix) or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.submodule_search_locations is None or spec.origin is None:
            return spec  # a plain module: the spec the path finder gives, found once
        if not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        try:  # the source as the import system would read it to run it
            source = spec.loader.get_source(fullname)
        except (ImportError, OSError, UnicodeDecodeError):
            return spec
        exported = exports(source) if source is not None else None
        if exported is not None:
            spec.loader = _Loader(exported)
        return spec


def install(package: str = "anthropic") -> None:
    """Before `package` is first imported: its subpackages load lazily from then on (once imported, it stays as
    it was loaded). Idempotent."""
    with _lock:
        if package in _installed or package in sys.modules:
            return
        _installed.add(package)
        sys.meta_path.insert(0, LazyPackages(package))
