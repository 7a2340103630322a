"""The REPL's elicitation form as logic, in-process: the schema read defensively, each field pre-filled with
its default, an answer re-asked until it passes its field's checks, and the server's text escaped.
(The form's keys and lines go through ask.py's `choose` and prompt_toolkit's prompt, which the pty tests of
the permission question already cover; a pty test here would cost more than the suite's budget allows.)
"""

from __future__ import annotations

import pytest

from sprout_agent.config.settings import elicitation_policy, sampling_allowed
from sprout_agent.core.errors import UsageError
from sprout_agent.faces.terminal.elicit_form import field_label, fill
from sprout_agent.mcp import elicitation as el

pytestmark = pytest.mark.anyio


class Typist:
    """Answers the form's prompts from a script, recording each prompt and the text it was pre-filled with."""

    def __init__(self, *lines: str | None) -> None:
        self.lines = list(lines)
        self.prompts: list[tuple[str, str]] = []
        self.said: list[str] = []

    async def read(self, label: str, default: str) -> str | None:
        self.prompts.append((label, default))
        return self.lines.pop(0)

    def say(self, text: str, style: str) -> None:
        del style
        self.said.append(text)


async def test_the_form_is_pre_filled_with_defaults_and_re_asks_until_an_answer_fits() -> None:
    from tests.asking_server import FORM

    form = el.parse_form(FORM)
    typist = Typist("Ada", "two hundred", "200", "41", "0.25", "n", "1", "")  # city (optional) left empty
    content = await fill(form, typist.read, typist.say)
    assert content == {"name": "Ada", "age": 41, "score": 0.25, "subscribe": False, "colour": "red"}
    assert [default for _, default in typist.prompts] == ["Ada", "36", "36", "36", "0.5", "y", "green", ""]
    assert typist.prompts[0][0] == "name* › " and typist.prompts[-1][0] == "city › "
    assert typist.said == ["  age: must be a whole number", "  age: must be at most 150"]
    assert content is not None and el.problems(form, content) == []


async def test_a_required_field_left_empty_is_asked_again_and_giving_up_cancels() -> None:
    form = el.parse_form({"properties": {"token": {"type": "string"}}, "required": ["token"]})
    typist = Typist("", None)
    assert await fill(form, typist.read, typist.say) is None
    assert typist.said == ["  token: required"]


def test_the_servers_field_text_is_shown_escaped() -> None:
    form = el.parse_form({"properties": {"x\x1b[2J": {"type": "string", "title": "evil\x1b]0;title\x07"}}})
    label = field_label(form.fields[0])
    assert "\x1b" not in label and "\x07" not in label and "\\x1b" in label


def test_schemas_outside_the_spec_are_refused_and_bad_defaults_dropped() -> None:
    with pytest.raises(el.SchemaError, match="not a primitive"):
        el.parse_form({"properties": {"nested": {"type": "object"}}})
    form = el.parse_form({"properties": {"n": {"type": "integer", "maximum": 3, "default": 9}}, "required": ["n"]})
    assert form.fields[0].default is None and el.defaults(form) is None
    titled = {"type": "string", "oneOf": [{"const": "a", "title": "Apple"}, {"const": "b", "title": "Banana"}]}
    choice = el.parse_form({"properties": {"fruit": titled}}).fields[0]
    assert (choice.kind, choice.options, el.parse_value(choice, "Banana")) == ("enum", ("a", "b"), "b")
    many = el.parse_form({"properties": {"tags": {"type": "array", "items": {"enum": ["x", "y"]}, "default": ["y"]}}})
    assert el.defaults(many) == {"tags": ["y"]} and el.parse_value(many.fields[0], "x, 2") == ["x", "y"]


def test_the_unattended_policy_comes_from_the_flag_then_the_real_environment_only() -> None:
    assert elicitation_policy(None, {}) == "decline"
    assert elicitation_policy(None, {"SPROUT_AGENT_ELICITATION": "accept-defaults"}) == "accept-defaults"
    assert elicitation_policy("decline", {"SPROUT_AGENT_ELICITATION": "accept-defaults"}) == "decline"
    with pytest.raises(UsageError, match="--elicitation must be one of decline, accept-defaults"):
        elicitation_policy("yes", {})
    assert not sampling_allowed(False, {}) and sampling_allowed(False, {"SPROUT_AGENT_ALLOW_SAMPLING": "1"})
