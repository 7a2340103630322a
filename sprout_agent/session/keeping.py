"""An "always" answer kept for later sessions: the call's rule in Claude Code's syntax (claude_rules.saved_rule),
written to the project's `.claude/settings.local.json` (config/local_settings.py) and honoured by this session too."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio

from sprout_agent.config.claude_settings import LOCAL, chosen_sources
from sprout_agent.config.local_settings import Kept, keep_allow_rule
from sprout_agent.core.claude_rules import saved_rule
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permissions import Keep
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.core.settings_rules import Rule, parse_rules
from sprout_agent.session.prepared import Prepared
from sprout_agent.trust.opening import Refused


def keeper(p: Prepared, emit: Callable[[Event], None]) -> Keep | None:
    """None where nothing may be kept: managed settings that allow only their own rules (Claude Code offers no
    "always" there), or a run that does not read the project's local file (--setting-sources without `local`)."""
    if p.claude.managed_rules_only or LOCAL not in chosen_sources(p.options.setting_sources):
        return None
    cwd = p.options.cwd
    home = p.inherited_env.get("HOME") or None

    async def keep(spec: ToolSpec, use: ToolUse) -> Sequence[Rule]:
        rule = saved_rule(spec.server, spec.tool, use.input)
        if rule is None:
            return ()

        def write() -> Kept:
            return keep_allow_rule(cwd, rule, data_dir=p.locations.data, run_mode=p.claude.run_mode)

        try:
            kept = await anyio.to_thread.run_sync(write)
        except (OSError, Refused) as error:
            why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            emit(Notice(f"{rule} not kept for later sessions ({why}); it is allowed for this one", "warning"))
            return ()
        emit(Notice(kept.notice()))
        made, _ = parse_rules("allow", [rule], source=str(kept.path), settings_base=str(cwd), cwd=str(cwd), home=home)
        return made

    return keep
