"""A turn's changes as one unified diff per file, from its checkpoints: what an editor shows as the turn's diff
(ACP), commands' changes included. Binary files and very large diffs are left out."""

from __future__ import annotations

import os
from collections.abc import Mapping

from sprout_agent.checkpoints.git_store import RootStore
from sprout_agent.checkpoints.timeline import Turn

MAX_PATCH_CHARS = 200_000  # of one file's diff: past it the editor gets the file's name only, from the turn's line


def turn_patches(stores: Mapping[str, RootStore], turn: Turn) -> list[tuple[str, str]]:
    """(full path, unified diff) for each text file the turn changed, in path order."""
    found: list[tuple[str, str]] = []
    for root, before in turn.before.items():
        after = turn.after.get(root, before)
        store = stores.get(root)
        if store is None or after == before:
            continue
        old, new = store.tree(before), store.tree(after)
        changed = sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
        for path, section in sections(store.patch(before, after, changed)):
            if "GIT binary patch" not in section and "Binary files" not in section and len(section) <= MAX_PATCH_CHARS:
                found.append((os.path.join(root, path), section))
    return found


def sections(patch: str) -> list[tuple[str, str]]:
    """The patch cut at each `diff --git` header, with the path its `+++`/`---` lines name."""
    cut: list[tuple[str, str]] = []
    for chunk in patch.split("\ndiff --git "):
        text = chunk if chunk.startswith("diff --git ") else f"diff --git {chunk}"
        path = _path(text)
        if path is not None:
            cut.append((path, text if text.endswith("\n") else text + "\n"))
    return cut


def _path(section: str) -> str | None:
    """A new file's `---` is /dev/null and a deleted one's `+++`: the other names it (no renames are asked for)."""
    for line in section.splitlines():
        if line.startswith(("--- a/", "+++ b/")):
            return line[6:]
    return None
