"""The command line: the Typer app, Claude Code's flags, the options every command shares, start-up and exit
codes. The only importer of typer; it picks a face (repl, headless, acp) and runs it."""
