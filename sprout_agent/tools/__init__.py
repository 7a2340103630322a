"""Built-in MCP servers (dev tools, todo list): standalone, never importing the agent's core."""
