"""How a person, a script or an editor drives a session. `cli/` (the command line and its subcommands) over `repl/`,
`headless/` (-p), `acp/`, `pages/` and `mcp_serve/` (the agent as an MCP server); `sdk/` (the SDKs' control
protocol, which headless drives); below them `terminal/` (rendering, input), `lifecycle.py` (signals and
`_SessionEnd`), `slash_commands.py` (the slash-command table) and `warm/` (the warm interpreter). Faces import the
layers below them, never each other sideways.
"""
