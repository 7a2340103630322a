"""What the Models API and the SDK say about models: one model's entry (its facts' source) and the ids an editor's
model picker offers, mapped to the chosen provider's names."""

from __future__ import annotations

import re
from typing import Any

from sprout_agent.config.provider import Provider, native_model
from sprout_agent.model import lazy_sdk
from sprout_agent.model.facts import Unreachable

MODELS_API_TIMEOUT = 3.0  # a cold start waits at most this long for the model's facts (overlapped with servers)


def retrieve_model_info(model: str, api_key: str | None, base_url: str | None) -> dict[str, Any] | None:
    """`models.retrieve` as JSON; None when the API has no entry (404, or a proxy without /v1/models)."""
    lazy_sdk.install()  # a first run asks for the facts before the session's client is built
    import anthropic

    client = anthropic.Anthropic(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        timeout=MODELS_API_TIMEOUT,
        open_telemetry={"traces": False, "propagation": False},  # as the session's client: no spans of its own
    )
    try:
        return client.models.retrieve(model).model_dump(mode="json")
    except (anthropic.NotFoundError, anthropic.BadRequestError, anthropic.PermissionDeniedError):
        return None
    except anthropic.APIError as error:  # offline, timeout, 5xx: ask again next time
        raise Unreachable(str(error)) from error
    finally:
        client.close()


def known_models(provider: Provider | None = None) -> tuple[str, ...]:
    """The model ids the anthropic SDK names in its public `ModelParam`, without dated snapshots: an editor's model
    picker, kept current by the SDK's upgrades rather than by hand; as `provider` names them (Bedrock's inference
    profiles, Vertex's dated ids) when one is given. The SDK's list of deprecated models is private to it (a module
    it may move or drop in any release), so a deprecated alias stays listed."""
    from typing import get_args

    lazy_sdk.install()
    from anthropic.types.model_param import ModelParam

    names = (name for literal in get_args(ModelParam) for name in get_args(literal) if isinstance(name, str))
    current = (name for name in names if not _DATED.search(name))
    if provider is None:
        return tuple(current)
    return tuple(dict.fromkeys(native_model(name, provider) for name in current))


_DATED = re.compile(r"-\d{8}$")
