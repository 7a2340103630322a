"""`sprout-agent acp`: the agent loop served to editors over the Agent Client Protocol (version 1, stdio)."""
