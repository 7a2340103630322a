"""scripts/import_cycles.py on small packages: which imports make a cycle and which do not."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def checker() -> ModuleType:
    """scripts/ is no package: the script loaded from its file (registered, as its dataclass needs)."""
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "scripts" / "import_cycles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def cycles(root: Path, with_type_checking: bool = False) -> list[list[str]]:
    ic = checker()
    graph = ic.import_graph(root, with_type_checking)
    return [cycle for group in ic.strongly_connected(graph) for cycle in ic.cycles_in(graph, group)]


def test_a_lazy_import_closes_a_cycle(tmp_path: Path) -> None:
    root = package(tmp_path, {"a.py": "from pkg import b\n", "b.py": "def f():\n    from pkg.a import x\n"})
    assert cycles(root) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_type_checking_imports_are_left_out_unless_asked_for(tmp_path: Path) -> None:
    guarded = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import d\nelse:\n    pass\n"
    root = package(tmp_path, {"c.py": guarded, "d.py": "from . import c\n"})
    assert cycles(root) == []
    assert cycles(root, with_type_checking=True) == [["pkg.c", "pkg.d", "pkg.c"]]


def test_relative_and_package_imports_resolve_to_modules(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "a.py": "import pkg.sub.e\n",
            "sub/__init__.py": "",
            "sub/e.py": "from ..a import name\nfrom . import f\n",
            "sub/f.py": "x = 1\n",
        },
    )
    graph = checker().import_graph(root, False)
    assert [edge.target for edge in graph["pkg.sub.e"]] == ["pkg.a", "pkg.sub.f"]
    assert cycles(root) == [["pkg.a", "pkg.sub.e", "pkg.a"]]


def test_every_cycle_of_a_group_is_named_once(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {"s.py": "import pkg.h\nimport pkg.r\n", "h.py": "import pkg.s\n", "r.py": "def f():\n    import pkg.s\n"},
    )
    assert cycles(root) == [["pkg.h", "pkg.s", "pkg.h"], ["pkg.r", "pkg.s", "pkg.r"]]


def test_the_command_exits_1_naming_the_cycle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = package(tmp_path, {"a.py": "from pkg import b\n", "b.py": "def f():\n    from pkg import a\n"})
    monkeypatch.setattr("sys.argv", ["import_cycles.py", str(root)])
    assert checker().main() == 1
    err = capsys.readouterr().err
    assert "a → b → a" in err and "b imports a at line 2 (lazy)" in err
    (root / "b.py").write_text("")
    assert checker().main() == 0
    assert "none among 3 modules" in capsys.readouterr().out
