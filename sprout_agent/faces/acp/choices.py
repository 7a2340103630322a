"""The editor's pickers: session modes (our permission modes) and session config options (the same mode, and the
model), as `session/new` answers them and `current_mode_update` / `config_option_update` repeat them."""

from __future__ import annotations

from collections.abc import Iterable

from sprout_agent.core.permission_mode import PermissionMode, parse_mode
from sprout_agent.faces.acp.wire import INVALID_PARAMS, Json, RpcError

MODE_OPTION, MODEL_OPTION = "mode", "model"  # the config options' ids
# (id, name, description): ours, plus Claude Code's acceptEdits; `plan` and `default`, `bypassPermissions` and
# `dontAsk` given on the command line are shown as the mode here that behaves the same (core/permission_mode.py).
MODES: tuple[tuple[PermissionMode, str, str], ...] = (
    (PermissionMode.ASK, "Ask", "Reads run; edits, commands and other tools ask first"),
    (PermissionMode.ACCEPT_EDITS, "Accept edits", "As Ask, but the built-in file edits run unasked"),
    (PermissionMode.READ_ONLY, "Read only (plan)", "Only reads run, and commands in the read-only sandbox"),
    (PermissionMode.AUTO, "Auto", "Every call runs unasked (the OS sandbox still confines commands)"),
)


def shown_mode(given: PermissionMode) -> PermissionMode:
    """The listed mode that behaves as `given` (ours or Claude Code's); `given` itself when none does."""
    return next((mode for mode, _, _ in MODES if mode.behaves_as(given)), given)


def listed_mode(raw: object) -> PermissionMode:
    """A mode id the editor sent: one we listed, else Invalid params."""
    if not isinstance(raw, str) or raw not in {mode for mode, _, _ in MODES}:
        listed = ", ".join(mode for mode, _, _ in MODES)
        raise RpcError(INVALID_PARAMS, f"Invalid params: unknown mode {str(raw)[:80]!r} (modes: {listed})")
    return parse_mode(raw)


def mode_state(current: str) -> Json:
    modes = [{"id": mode, "name": name, "description": about} for mode, name, about in MODES]
    return {"currentModeId": current, "availableModes": modes}


def config_options(mode: str, model: str, models: Iterable[str]) -> list[Json]:
    mode_choices = [{"value": value, "name": name, "description": about} for value, name, about in MODES]
    model_choices = [{"value": name, "name": name} for name in unique((model, *models))]
    return [
        {"id": MODE_OPTION, "name": "Mode", "description": "When a tool call asks first", "category": "mode",
         "type": "select", "currentValue": mode, "options": mode_choices},
        {"id": MODEL_OPTION, "name": "Model", "description": "The model for the next request", "category": "model",
         "type": "select", "currentValue": model, "options": model_choices},
    ]  # fmt: skip


def unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name in names if name))
