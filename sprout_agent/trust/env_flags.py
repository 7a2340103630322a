"""Boolean environment variables, read one way: one set of spellings for on and for off (docs/configuration.md,
"Switches"). Stdlib only and tiny: the warm launcher and the built-in tool servers read switches before, or
without, anything else of the agent.
"""

from __future__ import annotations

from collections.abc import Mapping

ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")


def env_flag(environ: Mapping[str, str], name: str, default: bool = False, *, strict: bool = False) -> bool:
    """`name` as a switch: one of ON or OFF in any case, `default` when unset or blank. Any other value is
    `default` too, so a misspelt switch never fails the launcher or a tool server; `strict` (the settings a run
    checks at start) makes it a ValueError naming the spellings instead."""
    value = environ.get(name, "").strip()
    word = value.lower()
    if word in ON:
        return True
    if word in OFF:
        return False
    if strict and word:
        raise ValueError(f"{name} must be one of {', '.join(ON)} (on) or {', '.join(OFF)} (off), got {value!r}")
    return default
