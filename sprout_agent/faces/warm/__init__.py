"""The warm interpreter: a per-user process that has already imported the SDKs and forks one child per `-p` run.

`sprout-agent -p` spends about a second and a half of CPU importing anthropic, mcp and pydantic before its first
request; a script, an SDK or a batch that runs it a hundred times pays that a hundred times. So, as build
daemons and editor servers do, the first such run starts a zygote in the background (`zygote.py`): it imports
everything a run needs, then waits on a Unix socket only its user can reach (`place.py`). Each later run
(`client.py`) hands the zygote its argv, working directory, environment, umask and its stdin, stdout and stderr
(the descriptors themselves); the zygote forks, and the child becomes that run: the same code from
`launch.main` on, with the caller's terminal, cwd and environment, in a process of its own. The caller stays
as a thin relay of signals one way and of the exit status the other, so the run exits with the same code, or
dies of the same signal, as a cold one.

What one run leaves for the next: nothing. The zygote never reads a request (the child does, after the fork), never
runs a session, and was started with a minimal environment: each child is a fresh copy of a process that only
imported modules. Off with `--no-warm` or `SPROUT_AGENT_WARM=0`; it ends after `SPROUT_AGENT_WARM_IDLE_SECONDS`
(600) without a run, and as soon as its runs have ended once the installed code is no longer what it imported. The
interactive session and the subcommands never use it. `live.py` finds the living ones by their locks (`sprout-agent
doctor`) and removes the files of dead ones; `title.py` is what `ps` and `top` call a run and a warm interpreter
(the `setproctitle` package, imported when a title is first set). Also: `starting.py` (starting a zygote),
`wire.py` (what the three say), `inherited.py` (what a process inherits, in one list), `child.py` (a child becoming
the run). A mechanism below the command line, which tells it what to preload and run (faces/cli/warm_run.py).
Standard library only: the client side runs before anything heavy.

Imports: trust.
"""
