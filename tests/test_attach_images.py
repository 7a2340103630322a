"""Images and PDFs in: `@picture.png` in the REPL, image/document blocks in stream-json, image prompts in ACP;
the type from the bytes (never the name), the API's limits, and the fake refusing what the API refuses."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.events import Event
from sprout_agent.core.images import PDF, attachment, sniff
from sprout_agent.core.messages import Image, Message, Text
from sprout_agent.core.protocols import ModelRequest
from sprout_agent.faces.acp.prompt_content import image_input, prompt_content
from sprout_agent.faces.acp.session_template import AcpSetup
from sprout_agent.faces.acp.wire import INVALID_PARAMS, RpcError
from sprout_agent.faces.sdk.user_lines import parse_user_message
from sprout_agent.faces.terminal.prompt_attach import attach_mentions
from sprout_agent.model import facts as model_facts
from sprout_agent.model.client import AnthropicModel
from sprout_agent.session import store
from tests.api_rules import request_problems
from tests.fake_anthropic import FakeAnthropic, model_info, reply
from tests.loop_doubles import build_loop
from tests.loop_doubles import reply as step

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", 2, 2) + b"\x08\x02\x00\x00\x00" + b"\0" * 16
PDF_BYTES = b"%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_the_type_comes_from_the_bytes_and_a_declared_type_must_agree() -> None:
    assert (sniff(PNG), sniff(PDF_BYTES), sniff(b"hello")) == ("image/png", PDF, None)
    assert attachment(PNG) == Image("image/png", b64(PNG))
    assert attachment(PNG, "image/jpeg") == "declared image/jpeg, but the bytes are image/png"
    assert "over the API's 5 MB limit" in str(attachment(PNG + b"\0" * (4 * 2**20)))


def test_at_mentions_attach_an_image_and_a_pdf_by_content_and_a_text_file_named_png_stays_text(tmp_path: Path) -> None:
    (tmp_path / "shot.dat").write_bytes(PNG)  # no telling extension: the bytes decide
    (tmp_path / "spec.pdf").write_bytes(PDF_BYTES)
    (tmp_path / "notes.png").write_text("just text\n")
    attached = attach_mentions("see @shot.dat and @spec.pdf and @notes.png", tmp_path)
    assert [i.media_type for i in attached.images] == ["image/png", PDF]
    assert '<file path="notes.png">\njust text\n</file>' in attached.text
    assert attached.notes[:2] == ("@shot.dat: attached as image/png (0 KiB)", "@spec.pdf: attached as PDF (0 KiB)")


def test_an_at_mention_of_an_image_the_api_would_refuse_is_a_note_not_an_attachment(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(PNG + b"\0" * (4 * 2**20))
    attached = attach_mentions("@big.png", tmp_path)
    assert attached.images == () and "not attached (image/png of" in attached.notes[0]


@pytest.mark.anyio
async def test_an_image_prompt_reaches_the_api_as_image_and_document_blocks_the_api_accepts() -> None:
    loop = build_loop([step("A red square and a spec.")])
    await loop.agent.run_turn("what is this?", (Image("image/png", b64(PNG)), Image(PDF, b64(PDF_BYTES))))
    content = loop.model.bodies[0]["messages"][0]["content"]
    assert [b["type"] for b in content] == ["text", "image", "document"]
    assert content[2]["source"] == {"type": "base64", "media_type": PDF, "data": b64(PDF_BYTES)}


@pytest.mark.anyio
async def test_an_image_and_a_pdf_go_through_the_sdk_and_the_fake_accepts_them() -> None:
    events: list[Event] = []
    message = Message("user", (Text("look"), Image("image/png", b64(PNG)), Image(PDF, b64(PDF_BYTES))))
    with FakeAnthropic([reply("seen")]) as fake:
        model = AnthropicModel(
            model="claude-x", max_tokens=100, emit=events.append, api_key="k", base_url=fake.base_url
        )
        await model.complete(ModelRequest("", [message]), lambda _t: None)
        await model.aclose()
    assert fake.refused == []
    assert [b["type"] for b in fake.requests[0].body["messages"][0]["content"]] == ["text", "image", "document"]


def test_the_fake_refuses_a_document_that_is_not_a_pdf_and_an_image_whose_bytes_are_another_type() -> None:
    def body(block: dict[str, object]) -> dict[str, object]:
        return {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [block]}]}

    fake_pdf = {"type": "document", "source": {"type": "base64", "media_type": PDF, "data": b64(PNG)}}
    assert "the PDF specified was not valid" in str(request_problems(body(fake_pdf)))
    jpeg = {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": b64(PNG)}}
    assert "does not match the provided media type" in str(request_problems(body(jpeg)))


def test_a_pdf_survives_the_transcript() -> None:
    message = Message("user", (Text("read"), Image(PDF, b64(PDF_BYTES))))
    assert store.decode_message(json.loads(json.dumps(store.encode_message(message)))) == message


# --- stream-json input ---------------------------------------------------------------------------------
def stream_line(*blocks: dict[str, object]) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": list(blocks)}})


def test_stream_json_input_takes_image_and_document_blocks_checked_like_the_api() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}}
    document = {"type": "document", "source": {"type": "base64", "media_type": PDF, "data": b64(PDF_BYTES)}}
    text, images = parse_user_message(stream_line({"type": "text", "text": "what?"}, image, document))
    assert text == "what?" and [i.media_type for i in images] == ["image/png", PDF]
    assert parse_user_message(stream_line(image))[0] == ""  # an image alone is a prompt


def test_stream_json_input_refuses_an_image_whose_bytes_contradict_its_type() -> None:
    gif = {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": b64(PNG)}}
    with pytest.raises(ValueError, match=r"message.content.0: declared image/gif, but the bytes are image/png"):
        parse_user_message(stream_line(gif))
    with pytest.raises(ValueError, match="not valid base64"):
        parse_user_message(stream_line({"type": "image", "source": {"type": "base64", "media_type": "x", "data": "%"}}))


# --- ACP -------------------------------------------------------------------------------------------------
def test_acp_image_prompts_are_attachments_and_a_bad_one_is_invalid_params() -> None:
    text, images = prompt_content(
        [{"type": "text", "text": "this?"}, {"type": "image", "data": b64(PNG), "mimeType": "image/png"}]
    )
    assert text == "this?" and images == (Image("image/png", b64(PNG)),)
    with pytest.raises(RpcError) as refused:
        prompt_content([{"type": "image", "data": b64(b"plain"), "mimeType": "image/png"}])
    assert refused.value.code == INVALID_PARAMS and "not a PNG, JPEG, GIF or WebP image" in str(refused.value)


def test_acp_advertises_image_prompts_unless_the_cached_facts_say_the_model_takes_none(tmp_path: Path) -> None:
    where = Locations(None, None, None, None, tmp_path)
    assert image_input(AcpSetup(Options(model="claude-seer"), locations=where))
    blind = model_info("claude-blind")
    blind["capabilities"]["image_input"] = {"supported": False}
    model_facts.resolve("claude-blind", None, tmp_path / "models", lambda: blind)  # cached as a start would
    assert not image_input(AcpSetup(Options(model="claude-blind"), locations=where))
