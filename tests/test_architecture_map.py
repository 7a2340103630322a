"""The map matches the rooms (docs/architecture.md): the page's layers and folders are generated from the
import-linter contracts and the folders' docstrings, every module and folder is named in its folder's docstring,
and each `Imports:` line is what the code imports (scripts/architecture_doc.py)."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = runpy.run_path(str(ROOT / "scripts" / "architecture_doc.py"))


def test_the_page_is_what_the_contracts_and_the_docstrings_say() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert DOC["render"](page) == page, "docs/architecture.md differs: run python scripts/architecture_doc.py --write"


def test_every_module_and_folder_is_named_in_its_folders_docstring_with_what_it_imports() -> None:
    assert DOC["problems"]() == []


def test_every_folder_has_a_section_on_the_page() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert [f for f in DOC["folders"]() if f"`{f}/`" not in page] == []


def test_a_docstring_that_leaves_a_module_out_or_names_it_only_inside_another_name_is_caught() -> None:
    unnamed = DOC["unnamed"]
    text = "`agent.py` is the loop; `sub_agents.py` and `hooks/` beside it."
    assert unnamed(text, ["agent.py", "hooks/", "events.py", "agents.py"]) == ["events.py", "agents.py"]


def test_an_imports_line_is_read_whole_even_when_it_wraps() -> None:
    stated = DOC["stated_imports"]
    assert stated("Text.\n\nImports: faces/sdk, session,\nconfig, trust and `core/`.\n") == {
        "faces/sdk", "session", "config", "trust", "core"
    }  # fmt: skip
    assert stated("Imports: nothing of sprout-agent.") == set()
    assert stated("No line.") is None


def test_the_room_table_says_what_the_code_imports_beside_what_the_contracts_allow() -> None:
    allowed, actual = DOC["allowed_imports"](), DOC["imports_between_rooms"]()
    assert allowed["core"] == set() and actual["core"] == set()
    assert allowed["tools"] == {"trust"} and actual["tools"] == {"trust"}
    assert all(actual[room] <= allowed[room] for room in actual), "import-linter should have failed first"
