"""Every request a replay sends, through the fake API's rules: `endpoint_problems` (tests/api_rules.py), the one
check tests/fake_anthropic.py runs on a live request, run on each request the player answers. So a replay cannot pass
on a request the real API would refuse, even where strict matching puts the difference aside (a tool call id, a
cache marker) or lenient matching lets it through. tests/headless_here.py applies it to every in-process replay."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tests.api_rules import InvalidRequest, endpoint_problems
from tests.fake_providers import bedrock_messages

if TYPE_CHECKING:
    from sprout_agent.model.cassettes.player import Answered
    from sprout_agent.session.prepared import Prepared


@dataclass
class ReplayRules:
    """The problems of every request the replay sent, by request number; `assert_valid` fails the test on any."""

    problems: list[str] = field(default_factory=list[str])

    def watching(self, prepared: Prepared) -> Prepared:
        """`prepared` with its replay's requests checked (as they are answered); unchanged when it replays nothing."""
        plan = prepared.tape
        if plan is None or plan.replay is None:
            return prepared
        then = plan.observe

        def observe(answered: Answered) -> None:
            request = answered.request
            path, body = str(request.get("path", "")), request.get("body")
            path, body = bedrock_messages(path, body) or (
                urlsplit(path).path,
                body,
            )  # Bedrock's wire, as its fake reads it
            found = endpoint_problems(path, body)
            self.problems += [f"request {answered.number} ({path}): {problem}" for problem in found]
            if then is not None:
                then(answered)

        return replace(prepared, tape=replace(plan, observe=observe))

    def assert_valid(self) -> None:
        if self.problems:
            raise InvalidRequest("the replay sent what the API would refuse:\n  " + "\n  ".join(self.problems))
