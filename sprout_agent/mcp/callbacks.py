"""The SDK callbacks a ClientSession answers a server's own requests with: roots/list, elicitation/create and
sampling/createMessage, translated between mcp's types and ours (client_features.py, elicitation.py,
sampling.py). The SDK declares each capability because its callback is given (link._session).
"""

from __future__ import annotations

from typing import NamedTuple, cast

import mcp.types as types
from mcp.client.session import ClientRequestContext, ElicitationFnT, ListRootsFnT, SamplingFnT

from sprout_agent.core.errors import SproutError
from sprout_agent.core.events import ServerAsked
from sprout_agent.core.images import checked
from sprout_agent.core.messages import Image, Message, Text
from sprout_agent.core.stop_reasons import ModelStop
from sprout_agent.mcp import elicitation as el
from sprout_agent.mcp.client_features import ClientFeatures
from sprout_agent.mcp.sampling import SamplingRefused, SamplingRequest, reply_text

USER_REJECTED = -1  # the spec's code for a sampling request the user rejected
_STOP_REASONS: dict[ModelStop, str] = {
    "end_turn": "endTurn",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
}


class Callbacks(NamedTuple):
    list_roots: ListRootsFnT
    elicitation: ElicitationFnT
    sampling: SamplingFnT | None  # None: not declared


def callbacks(server: str, features: ClientFeatures) -> Callbacks:
    emit = features.emit

    async def list_roots(context: ClientRequestContext) -> types.ListRootsResult:
        del context
        roots = [types.Root.model_validate({"uri": r.uri, "name": r.name}) for r in features.roots.current]
        return types.ListRootsResult(roots=roots)

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        answer = await _answer(server, features.elicit, params)
        emit(ServerAsked(server, "elicitation", params.message, answer.action, answer.why))
        content = cast("dict[str, str | int | float | bool | list[str] | None] | None", answer.content)
        return types.ElicitResult(action=answer.action, content=content if answer.action == "accept" else None)

    sampler = features.sampler

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        del context
        assert sampler is not None
        request = _sampling_request(server, params)
        if isinstance(request, str):
            emit(ServerAsked(server, "sampling", "a request we cannot send", "refused", request))
            return types.ErrorData(code=types.INVALID_PARAMS, message=request)
        try:
            reply = await sampler.sample(request)
        except SamplingRefused as refused:
            return types.ErrorData(code=USER_REJECTED, message=str(refused))
        except SproutError as error:  # the model call failed (API error, budget): the server hears why
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"sampling failed: {error}")
        text = types.TextContent(type="text", text=reply_text(reply))
        stop = _STOP_REASONS.get(reply.stop_reason, reply.stop_reason)
        return types.CreateMessageResult(role="assistant", content=text, model=reply.model, stop_reason=stop)

    return Callbacks(list_roots, elicit, sample if sampler is not None else None)


async def _answer(server: str, elicitor: el.Elicitor, params: types.ElicitRequestParams) -> el.Answer:
    """Asks the face; an answer that fails the form's checks is never sent (declined, with the reasons)."""
    if isinstance(params, types.ElicitRequestURLParams):
        return await elicitor(el.UrlQuestion(server, params.message, params.url))
    try:
        form = el.parse_form(params.requested_schema)
    except el.SchemaError as error:
        return el.Answer("decline", why=f"the form cannot be shown: {error}")
    answer = await elicitor(el.FormQuestion(server, params.message, form))
    if answer.action != "accept":
        return answer
    wrong = el.problems(form, answer.content or {})
    return el.Answer("decline", why="; ".join(wrong)) if wrong else answer


def _sampling_request(server: str, params: types.CreateMessageRequestParams) -> SamplingRequest | str:
    """Ours, or why the request cannot go to the model as it is (tools, audio, a bad image)."""
    if params.tools:
        return "tools in sampling are not supported"
    messages: list[Message] = []
    for message in params.messages:
        blocks: list[Text | Image] = []
        for item in message.content_as_list:
            if isinstance(item, types.TextContent):
                blocks.append(Text(item.text))
            elif isinstance(item, types.ImageContent):
                image = checked(Image(item.mime_type, item.data))
                if isinstance(image, Text):
                    return f"an image the model cannot take: {image.text}"
                blocks.append(image)
            else:
                return f"{item.type} content is not supported in sampling (text and images only)"
        messages.append(Message(message.role, tuple(blocks)))
    return SamplingRequest(server, tuple(messages), params.system_prompt or "", params.max_tokens)
