"""OAuth for remote MCP servers: the SDK's provider with our token store (keyring or a private file) and the
browser login (or the test redirect)."""
