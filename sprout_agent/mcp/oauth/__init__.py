"""OAuth for remote MCP servers: `provider.py` (the SDK's provider with our token store), `store.py` (keyring or a
private file) and `login.py` (the browser login, or the test redirect).
"""
