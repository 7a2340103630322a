"""How a server is reached: `stdio.py`, `stdio_wire.py` and `framing.py` (our stdio transport, process groups,
the 16 MiB message cap, also of stream-json input), `in_process.py` (the built-in servers), `sdk.py` (an Agent
SDK's servers over its control protocol), `remote.py` and `http_cap.py` (Streamable HTTP and SSE).
"""
