"""Built-in MCP servers: `dev.py` (read, write, edit, glob, grep, bash) and `todo.py`, with their parts (`_files.py`,
`_grep.py`, `_listing.py`, `_shell.py`, `_procs.py`, `_server.py`). Standalone: nothing of the agent imports them
(config names them by module path), and they never import the agent (docs/tools.md).

Imports: trust.
"""
