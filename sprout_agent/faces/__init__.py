"""How a person, a script or an editor drives a session: `cli/` (the command line and its subcommands) over
`repl/`, `headless/` (-p) and `acp/`, which share `terminal/` (rendering, input), `lifecycle` (signals and
`_SessionEnd`) and `commands` (the slash-command table). Faces import the layers below them (session, mcp,
model, batch, config, trust, core), never each other sideways."""
