"""The MCP client; with tools/, the only importer of the mcp SDK and httpx2.

`pool.py` (`ServerPool`) owns every server's life, from the spawn to the end of its process group, and is the tool
host the loop calls; `announced.py` the built-in servers' tools offered before they start (each starts at its
first call); `link.py` is the client session to one server; `state.py`, `lists.py` (resources, prompts,
notifications), `results.py` (tool results as our blocks), `prompts.py` (`/server:prompt` and `@server:uri`),
`features.py` (the resource tools, re-listing); `client_features.py`, `callbacks.py`, `elicitation.py` and
`sampling.py` answer what servers ask; `agent_server.py` is the in-session `agent` server (the `task` tool);
`serving.py` the server side of `sprout-agent mcp serve` (the tools are the face's).
`transports/` how a server is reached, `oauth/` logins to remote servers.

Imports: config, trust, core.
"""
