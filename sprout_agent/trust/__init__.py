"""The mechanics of the boundary, shared by the agent and the built-in tools: the sandbox (bubblewrap,
Landlock), the write policy, the secrets filter for children's environments, untrusted text made printable,
edits and diffs, secrecy of the session files. A leaf above core/: tools/ may import it."""
