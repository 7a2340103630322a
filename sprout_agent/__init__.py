"""sprout-agent: a command-line coding agent with MCP-driven lifecycle hooks."""

__version__ = "0.1.0"
