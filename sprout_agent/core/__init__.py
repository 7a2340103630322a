"""The loop and what every layer shares; standard library and anyio only, no I/O library.

`agent.py` is the loop (user text → model → `_Stop` gate → tools → results → repeat) and owns the conversation;
`tool_round.py` runs one reply's tool calls (in parallel, each through the PreToolUse callbacks, the permission policy
and `_PreToolUse`, then `_PostToolUse`, recorded as it finishes). Both report what happens as events (`events.py`).
`protocols.py` holds the seams between the loop and its collaborators (the tool host, the model) as Protocols,
`messages.py` the conversation as plain frozen data, `replies.py` what the loop reads off a reply. `hooks/` the MCP
hooks and program callbacks; `compaction.py`; `permissions.py` with `permission_mode.py` (the mode, one type for every
spelling) and `claude_rules.py` (Claude Code's rules), `settings_rules.py` and `path_rules.py` (its settings files'
rules) and the tables of what a command rule covers (`command_rules.py`, `command_tables.py`, `command_table_git.py`);
`ledger.py` (tokens, prices, cost) with `model_names.py` (a Bedrock or Vertex id back to its model's name);
`errors.py` (the error tree and the exit codes); `images.py` (what the API accepts); `mentions.py` (`@name`);
`processes.py` (spawning a server in its own process group); `tool_names.py`; `status.py` (status lines the faces
share); `limits.py` (the loop's bounds); `stop_reasons.py` (why a reply or a turn ended, typed); `listing.py` (a
bounded listing for the model); `structured.py` (`--json-schema`'s `StructuredOutput`); `subagents.py` (what a
subagent may use); `tracing.py` (the seam telemetry implements); `late.py` (a late-bound handle: made first, bound
once, refused before); `collection.py` (the garbage collector held off while a cold process starts).

Imports: nothing of sprout-agent.
"""
