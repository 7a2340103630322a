"""Checkpoints of the working tree and rewind: `git_store` snapshots one root (a git repository's own object store
under `refs/sprout-agent/`, or a shadow repository), `tracker` takes them around each user turn and works out what
each turn changed, `rewind` plans and applies a way back that never overwrites the user's own work. Imports
config/, trust/ and core/; git is run as a program (no library)."""
