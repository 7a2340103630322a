"""Whether a command's bare program name runs a program the model cannot have written: the one a permission rule
for it (`Bash(pip:*)`) may cover. Stdlib only.

A rule names a program by its name, and bash runs the first executable of that name on PATH. With a directory
the model's tools can write on PATH before the real one (an activated `.venv/bin` in the working directory,
`node_modules/.bin`, a relative entry), `pip list` would run whatever the model put at `.venv/bin/pip`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from sprout_agent.trust.opening import under


def first_on_path(name: str, path: str, cwd: str) -> str | None:
    """The real path of the program bash runs for `name` with this PATH in `cwd` (relative entries, an empty one
    included, name directories of `cwd`), or None when there is none."""
    for entry in path.split(os.pathsep):
        candidate = os.path.join(cwd, entry or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.realpath(os.path.join(cwd, entry or "."))
    return None


def outside(roots: Sequence[str], env: Mapping[str, str], cwd: str) -> Callable[[str], bool]:
    """A check of a bare program name: True when PATH (the commands' own, in `env`) finds it in a directory that
    is not inside any of `roots` (where the model's tools and commands may write). Judged on the directory PATH
    names, not on where a link there leads: `.venv/bin/python` linking to `/usr/bin` is still a file the model
    may replace."""
    real_roots = tuple(os.path.realpath(root) for root in roots)
    path = env.get("PATH", os.defpath)

    def check(name: str) -> bool:
        found = first_on_path(name, path, cwd)
        return found is not None and not any(under(found, root) for root in real_roots)

    return check
