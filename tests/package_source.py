"""The agent's own modules, each read and parsed once per test process: the tests that hold a rule over the whole
package ("no module but X does Y") share these trees instead of each parsing all ~280 modules again (~0.5 s)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sprout_agent"


@functools.cache
def package_modules() -> tuple[tuple[Path, ast.Module], ...]:
    """(path, tree) of every module of sprout_agent/, in path order."""
    return tuple(
        (path, ast.parse(path.read_text(encoding="utf-8"), str(path))) for path in sorted(PACKAGE.rglob("*.py"))
    )
