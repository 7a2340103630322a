"""The interactive terminal session: `repl.py` (the prompt loop, slash commands, the resumed history), `asks.py` (what
servers ask: elicitation and sampling), `login.py` (`/login` for a server's OAuth), `rewind.py` (`/rewind`),
`view.py` (the texts around the prompt). Draws through `faces/terminal/`.

Imports: faces/terminal, faces/lifecycle, faces/slash_commands, faces/warm, session, mcp, checkpoints, config,
trust, core.
"""
