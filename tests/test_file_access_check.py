"""scripts/check_file_access.py: an open of a file outside the one reader and writer (trust/opening.py) and the
modules it lists fails scripts/check, naming the file and line; the tree as it is passes."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_file_access.py"


def _check(*packages: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, packages)], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.e2e
def test_every_way_of_opening_a_file_outside_the_reader_fails_the_check_naming_its_line(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "sneaky.py").write_text(
        "import io, os\n"
        "from pathlib import Path\n"
        "from os import open as o\n"
        "def f(p: Path) -> None:\n"
        "    open(p)\n"
        "    p.read_text()\n"
        "    p.read_bytes()\n"
        "    p.write_text('x')\n"
        "    p.write_bytes(b'x')\n"
        "    p.open()\n"
        "    os.open(p, os.O_RDONLY)\n"
        "    io.open(p)\n"
    )
    (package / "fine.py").write_text("import os, webbrowser\nos.fdopen(0)\nwebbrowser.open('https://x')\n")
    done = _check(package)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert [int(line.split(":")[1]) for line in lines] == [3, 5, 6, 7, 8, 9, 10, 11, 12]
    assert all("sneaky.py" in line and "trust/opening.py" in line for line in lines)


def test_a_listed_module_that_opens_no_file_any_more_fails_the_check_so_its_entry_goes(tmp_path: Path) -> None:
    """An entry left behind would let the next open in that module pass unseen."""
    (tmp_path / "still.py").write_text("def f(p):\n    return p.read_text()\n")
    (tmp_path / "moved.py").write_text("import os\ndef f(fd):\n    return os.fdopen(fd)\n")
    unneeded = runpy.run_path(str(SCRIPT))["unneeded"]
    assert unneeded(tmp_path, {"still.py": "why", "moved.py": "why"}) == ["moved.py"]
