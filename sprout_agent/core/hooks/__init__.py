"""The hooks: `_`-prefixed MCP tools the loop calls at every hook point, and the callbacks of a program that drives the
session, at the same points under one rule.

`contract.py` is the contract the agent and hook authors share (names, contexts, argument and answer shapes);
`calling.py` calls the hooks under the sovereignty rules (allowlist, timeout, objection budgets) and merges the
callbacks' answers; `program_callbacks.py` is the second source (the Claude Agent SDKs' `hooks`, the settings files'
command hooks), `hook_output.py` how Claude Code's hook output and matchers read; `notification.py` the
Notification point (a call waiting for permission); `in_history.py` what a hook said, as the history carries it;
`kit.py` checks a server's hooks against the contract (`sprout-agent hooks test`). Part of
`core/`: standard library and anyio only.
"""
