"""mkdocs hooks (mkdocs.yml `hooks:`): the docs pages render the same on the site as on GitHub.

A `|` inside a code span in a table cell must be written `\\|` for GitHub (GFM splits the row first); Python-Markdown
keeps the cell whole too but leaves the backslash in the code. This drops it, in table cells only.
"""

from __future__ import annotations

import re
from typing import Any

_CELL = re.compile(r"<t([dh])([^>]*)>(.*?)</t\1>", re.DOTALL)
_CODE = re.compile(r"<code>(.*?)</code>", re.DOTALL)


def _unescape_code(cell: re.Match[str]) -> str:
    body = _CODE.sub(lambda code: "<code>" + code.group(1).replace("\\|", "|") + "</code>", cell.group(3))
    return f"<t{cell.group(1)}{cell.group(2)}>{body}</t{cell.group(1)}>"


def on_page_content(html: str, **_: Any) -> str:
    return _CELL.sub(_unescape_code, html)
