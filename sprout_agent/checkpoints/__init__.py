"""Checkpoints of the working tree and rewind. `git_store.py` snapshots one root (a git repository's own object
store under `refs/sprout-agent/`, or a shadow repository) through `git_run.py` (git by the one runner) and `blobs.py`
(each file read through the descriptor opened for it); `tracker.py` takes them around each user turn and works out
what each turn changed; `timeline.py` the turns as the transcript records them; `turn_diff.py` a turn's diff;
`rewind.py` plans a way back that never overwrites the user's own work, and `put_back.py` applies it file by file.
Git is run as a program, no library.

Imports: trust, core.
"""
