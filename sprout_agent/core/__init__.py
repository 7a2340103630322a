"""The loop and what every layer shares: the agent, hooks and their contract, structured output, compaction,
permissions and Claude Code rules, the ledger, messages, events, protocols, errors, images, process groups.
Standard library and anyio only; imports nothing else of sprout-agent."""
