"""The mechanics of the boundary, shared by the agent and the built-in tools; standard library only, so tools/ may
import it.

`sandbox.py` (bubblewrap, with `sandbox_output.py`) and `landlock.py` (the fallback) confine commands;
`write_policy.py` (with `git_index.py`) says where the model's tools may write; `opening.py` is the one reader and
writer of a path the model or a repository names; `secrets.py` is the one filter of credentials out of every child's
environment and every text others read; `secrecy.py` holds `harden`, the first call of every entry point;
`private_files.py` the session files only their user reads; `untrusted.py` makes outside text safe for a terminal;
`edits.py` and `diffs.py` compute what an edit does; `workspace.py`, `reading.py` and `command_runs.py` are the dev
tools' rules, shared with the editor's route for them; `child_argv.py` puts text we do not own after `--`;
`git_runner.py` is the one way any part starts git; `program_lookup.py` says whether PATH finds a program outside
the writable roots; `runtime_dir.py` is where the warm interpreter listens; `env_flags.py` reads every on/off
environment variable one way.

Imports: nothing of sprout-agent.
"""
