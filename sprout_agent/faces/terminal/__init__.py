"""What a person sees in a terminal, for the REPL and for `-p` progress on stderr: rendering (rich), the
live tool view, diffs, checklists, questions and input (prompt_toolkit), `@file` attachments. The only importer
of rich and prompt_toolkit."""
