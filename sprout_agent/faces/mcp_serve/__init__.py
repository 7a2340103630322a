"""`sprout-agent mcp serve`: the agent as an MCP server, for other agents and programs to hand it whole tasks.

`serve.py` the server (stdio or Streamable HTTP, through `mcp/serving.py`) and its tools; `listening.py` where HTTP
listens and whether it may; `arguments.py` the tools' arguments and the narrowing rule (a call may only make a run
stricter than the server's); `calls.py` the calls, each prepared as a `-p` run, bounded in number; `run.py` one
call's runtime, turn, progress and answer.

Imports: faces/lifecycle, session, mcp, config, trust, core.
"""
