"""The Anthropic, Gemini and Ollama integrations against stand-ins of their own wire protocols.

Each provider's real LangChain integration (and SDK) is pointed at a local
stand-in with `base_url`; the tests read the exact request it recorded and
check how the managed agent handles the reply.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from langchain_core.messages import HumanMessage
from PIL import Image

from agents.call import CallSpec
from agents.local_reply_limit import LOCAL_REPLY_TOKENS
from agents.managed import AgentCallError, ManagedAgent
from agents.registry import resolve_agent
from tests.agent_calls import FAST_RETRIES, Rule, ask
from tests.builders import make_image
from tests.standins.protocols import (
    GEMINI_API_VERSIONS,
    TOKENS_IN,
    TOKENS_OUT,
    AnthropicMessages,
    GeminiGenerateContent,
    OllamaChat,
    OpenAIChat,
)
from tests.standins.server import Fault, Recorded, StandIn, StandInServer, WireProtocol

MODEL = "test-model"
ANSWER = {"left": "circles", "right": "squares"}
RETRY_AFTER_S = 1.0


def _decode(data: str) -> Image.Image:
    # urlsafe_b64decode also takes the standard alphabet; the Google SDK sends the URL-safe one.
    return Image.open(io.BytesIO(base64.urlsafe_b64decode(data)))


def _anthropic_images(body: Any) -> list[tuple[str, Image.Image]]:
    found = []
    for message in body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part["type"] == "image":
                source = part["source"]
                assert source["type"] == "base64"
                found.append((source["media_type"], _decode(source["data"])))
    return found


def _gemini_images(body: Any) -> list[tuple[str, Image.Image]]:
    found = []
    for content in body["contents"]:
        for part in content["parts"]:
            inline = part.get("inlineData", part.get("inline_data"))
            if inline is not None:
                mime = inline.get("mimeType", inline.get("mime_type"))
                found.append((mime, _decode(inline["data"])))
    return found


def _ollama_images(body: Any) -> list[tuple[str, Image.Image]]:
    # Ollama takes bare base64 with no MIME type; the decoded bytes say what they are.
    found = []
    for message in body["messages"]:
        for data in message.get("images", []):
            image = _decode(data)
            found.append((f"image/{(image.format or '').lower()}", image))
    return found


def _header(request: Recorded, name: str) -> str | None:
    return next((v for k, v in request.headers.items() if k.lower() == name.lower()), None)


def _anthropic_key(request: Recorded) -> str | None:
    # The installed `anthropic` SDK (2.x) sends the key as a bearer token, older ones as x-api-key.
    bearer = _header(request, "authorization")
    return _header(request, "x-api-key") or (bearer.removeprefix("Bearer ") if bearer else None)


@dataclass(frozen=True)
class Wire:
    """One provider: its stand-in protocol, key variable and how to read its requests."""

    name: str
    protocol: Callable[[], WireProtocol]
    path: str
    """The request paths the real service serves (a regular expression)."""
    key_env: str | None
    images: Callable[[Any], list[tuple[str, Image.Image]]]
    sent_key: Callable[[Recorded], str | None]
    truncation: tuple[str, str]
    """Where the integration puts the stop reason in `response_metadata`, and its value at the limit."""


WIRES = {
    "anthropic": Wire(
        "anthropic",
        AnthropicMessages,
        r"/v1/messages",
        "ANTHROPIC_API_KEY",
        _anthropic_images,
        _anthropic_key,
        ("stop_reason", "max_tokens"),
    ),
    "gemini": Wire(
        "gemini",
        GeminiGenerateContent,
        rf"/{GEMINI_API_VERSIONS}/models/{MODEL}:generateContent",
        "GOOGLE_API_KEY",
        _gemini_images,
        lambda request: _header(request, "x-goog-api-key"),
        ("finish_reason", "MAX_TOKENS"),
    ),
    "ollama": Wire(
        "ollama",
        OllamaChat,
        r"/api/chat",
        None,
        _ollama_images,
        lambda request: _header(request, "authorization"),
        ("done_reason", "length"),
    ),
}
KEY = "standin-key-0123456789abcdef"
"""The fake key; long enough for `agents.secrets` to treat it as a secret."""


@dataclass
class Setup:
    wire: Wire
    server: StandInServer

    def agent(self, **params: Any) -> ManagedAgent:
        return resolve_agent(
            f"{self.wire.name}:{MODEL}", {"base_url": self.server.url, **params}, retry_policy=FAST_RETRIES
        )

    def requests(self) -> list[Recorded]:
        return list(self.server.model_requests())

    def only_request(self) -> Any:
        [request] = self.requests()
        assert re.fullmatch(self.wire.path, urlsplit(request.path).path), request.path
        return request.body


def _setup(name: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    # Nothing from the real environment may pick another key, endpoint or credential.
    for variable in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "OLLAMA_HOST",
    ):
        monkeypatch.delenv(variable, raising=False)
    wire = WIRES[name]
    if wire.key_env is not None:
        monkeypatch.setenv(wire.key_env, KEY)
    with StandInServer(wire.protocol()) as server:
        yield Setup(wire, server)


@pytest.fixture(params=list(WIRES))
def each(home: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    yield from _setup(request.param, monkeypatch)


@pytest.fixture
def anthropic(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    yield from _setup("anthropic", monkeypatch)


@pytest.fixture
def gemini(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    yield from _setup("gemini", monkeypatch)


@pytest.fixture
def ollama(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    yield from _setup("ollama", monkeypatch)


def _structured(setup: Setup) -> Any:
    setup.server.responder = lambda body: json.dumps(ANSWER)
    reply = ask(setup.agent(), "Solve.", call=CallSpec(task="answer", output_schema=Rule))
    assert (reply.parse_status, reply.parsed, reply.parse_error) == ("ok", ANSWER, None)
    assert json.loads(reply.text) == ANSWER
    return setup.only_request()


# --- images -------------------------------------------------------------------------------------------


def test_images_arrive_encoded_the_providers_way_and_downscaled(
    each: Setup, shared_data: Path, tmp_path: Path
) -> None:
    panel = shared_data / "bongard-classic" / "001" / "0.png"
    big = make_image(tmp_path / "big.png", (10, 120, 200), size=(3000, 1500))
    reply = ask(each.agent(), "Describe both.", panel, big)
    assert reply.text == "stand-in reply"
    (panel_mime, sent_panel), (big_mime, sent_big) = each.wire.images(each.only_request())
    assert (panel_mime, big_mime) == ("image/png", "image/png")
    assert sent_panel.format == sent_big.format == "PNG"
    with Image.open(panel) as original:
        assert sent_panel.size == original.size  # small panels are sent as they are
        assert max(original.size) <= 1024
    assert sent_big.size == (1024, 512)
    assert sent_big.getpixel((900, 400)) == (10, 120, 200)


def test_anthropic_image_block_shape(anthropic: Setup, shared_data: Path) -> None:
    panel = shared_data / "bongard-classic" / "001" / "0.png"
    ask(anthropic.agent(), "Describe it.", panel)
    [message] = anthropic.only_request()["messages"]
    text, image = message["content"]
    assert message["role"] == "user"
    assert text == {"type": "text", "text": "Describe it."}
    assert image == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(panel.read_bytes()).decode(),
        },
    }


def test_gemini_image_part_shape(gemini: Setup, shared_data: Path) -> None:
    panel = shared_data / "bongard-classic" / "001" / "0.png"
    ask(gemini.agent(), "Describe it.", panel)
    [content] = gemini.only_request()["contents"]
    text, image = content["parts"]
    assert content["role"] == "user"
    assert text == {"text": "Describe it."}
    [key] = image
    assert key in ("inlineData", "inline_data")
    assert set(image[key]) in ({"mimeType", "data"}, {"mime_type", "data"})
    assert image[key].get("mimeType", image[key].get("mime_type")) == "image/png"
    assert base64.urlsafe_b64decode(image[key]["data"]) == panel.read_bytes()


def test_ollama_image_shape(ollama: Setup, shared_data: Path) -> None:
    panel = shared_data / "bongard-classic" / "001" / "0.png"
    ask(ollama.agent(), "Describe it.", panel)
    [message] = ollama.only_request()["messages"]
    assert message["role"] == "user"
    assert message["content"].strip() == "Describe it."
    assert message["images"] == [base64.b64encode(panel.read_bytes()).decode()]


# --- parameters -------------------------------------------------------------------------------------


def test_anthropic_parameters(anthropic: Setup) -> None:
    ask(anthropic.agent(temperature=0.25, max_tokens=50, top_p=0.5), "hello")
    body = anthropic.only_request()
    assert (body["model"], body["temperature"], body["max_tokens"], body["top_p"]) == (MODEL, 0.25, 50, 0.5)
    assert "tools" not in body and "tool_choice" not in body


def test_anthropic_always_sends_max_tokens(anthropic: Setup) -> None:
    ask(anthropic.agent(), "hello")
    body = anthropic.only_request()
    assert body["max_tokens"] == 2048  # the API requires it; the provider's default fills it in
    assert "temperature" not in body


def test_gemini_parameters(gemini: Setup) -> None:
    ask(gemini.agent(temperature=0.25, max_tokens=50, top_p=0.5, seed=7), "hello")
    body = gemini.only_request()  # the model is named in the path, checked there
    config = body["generationConfig"]
    assert (config["temperature"], config["maxOutputTokens"], config["topP"], config["seed"]) == (
        0.25,
        50,
        0.5,
        7,
    )
    assert "responseMimeType" not in config and "model" not in body


def test_ollama_parameters(ollama: Setup) -> None:
    ask(ollama.agent(temperature=0.25, max_tokens=50, top_p=0.5, seed=7), "hello")
    body = ollama.only_request()
    assert body["model"] == MODEL
    assert body["options"] == {
        "temperature": 0.25,
        "num_predict": 50,
        "top_p": 0.5,
        "seed": 7,
        "num_ctx": 4096,
    }
    assert "format" not in body


def test_ollama_reply_stops_within_its_context_where_no_limit_is_set(ollama: Setup) -> None:
    """Ollama's own num_predict is no limit: past the context it drops the prompt's start and goes on.
    With no -M max_tokens (the papers mostly state none) the reply gets the context's room left, at
    most the local reply limit; a set limit is sent as it is (test_ollama_parameters)."""
    ask(ollama.agent(), "hello")
    options = ollama.only_request()["options"]
    assert options["num_ctx"] == 4096 and 0 < options["num_predict"] <= min(LOCAL_REPLY_TOKENS, 4096)
    assert options["num_predict"] >= 4096 - 10  # "hello" is a few tokens


def test_ollama_context_is_sized_to_a_13_image_request(ollama: Setup, shared_data: Path) -> None:
    """Ollama cuts a prompt past its num_ctx silently: a sheet and 12 panels must fit the one sent."""
    panels = sorted((shared_data / "bongard-classic" / "001").glob("*.png"), key=lambda p: int(p.stem))
    ask(
        ollama.agent(max_tokens=200, top_k=40, repeat_penalty=1.1, keep_alive="10m"),
        "Sort them.",
        *panels,
        panels[0],
    )
    body = ollama.only_request()
    images = sum(len(message.get("images", [])) for message in body["messages"])
    assert images == 13 and body["keep_alive"] == "10m"
    assert body["options"]["num_ctx"] >= 13 * 1024 + 200 and body["options"]["num_ctx"] % 1024 == 0
    assert (body["options"]["top_k"], body["options"]["repeat_penalty"]) == (40, 1.1)


def test_ollama_refuses_a_request_its_fixed_context_cannot_hold(ollama: Setup, shared_data: Path) -> None:
    panels = sorted((shared_data / "bongard-classic" / "001").glob("*.png"))
    with pytest.raises(AgentCallError, match=r"needs about \d+ tokens .* more than -M num_ctx=4096"):
        ask(ollama.agent(num_ctx=4096), "Sort them.", *panels)
    assert ollama.requests() == []  # refused before it was sent, not cut by the server


# --- structured output ------------------------------------------------------------------------------


def test_anthropic_structured_output_forces_a_tool(anthropic: Setup) -> None:
    body = _structured(anthropic)
    [tool] = body["tools"]
    assert body["tool_choice"] == {"type": "tool", "name": tool["name"]}
    assert tool["name"] == "Rule"
    assert tool["input_schema"]["type"] == "object"
    assert tool["input_schema"]["required"] == ["left", "right"]
    assert set(tool["input_schema"]["properties"]) == {"left", "right"}


def test_gemini_structured_output_uses_a_response_schema(gemini: Setup) -> None:
    """As JSON Schema (`responseJsonSchema`), which takes what the OpenAPI subset of `responseSchema`
    refuses (the stand-in refuses it there, as the API does: next test)."""
    config = _structured(gemini)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config["responseJsonSchema"]
    assert schema["required"] == ["left", "right"]
    assert set(schema["properties"]) == {"left", "right"}


@pytest.mark.parametrize(("model", "ordered"), [("gemini-2.0-flash", True), ("gemini-2.5-flash", False)])
def test_gemini_2_0_is_told_the_order_of_a_structured_answers_keys(
    gemini: Setup, model: str, ordered: bool
) -> None:
    """Models before 2.5 keep keys in the schema's order only as `propertyOrdering` lists them."""
    gemini.server.responder = lambda body: json.dumps(ANSWER)
    agent = resolve_agent(f"gemini:{model}", {"base_url": gemini.server.url}, retry_policy=FAST_RETRIES)
    reply = ask(agent, "Solve.", call=CallSpec(task="answer", output_schema=Rule))
    assert reply.parsed == ANSWER
    [request] = gemini.requests()
    assert f"/models/{model}:generateContent" in request.path
    schema = request.body["generationConfig"]["responseJsonSchema"]
    assert list(schema["properties"]) == ["left", "right"]
    assert schema.get("propertyOrdering") == (["left", "right"] if ordered else None)


def test_property_ordering_reaches_every_object_and_reads_a_property_named_properties_as_one() -> None:
    from agents.providers.gemini import with_property_ordering

    inner = {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "string"}}}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"reason": {"type": "string"}, "properties": inner},
        "$defs": {"properties": inner},
        "items": [inner],
    }
    ordered = with_property_ordering(schema)
    assert ordered["propertyOrdering"] == ["reason", "properties"]
    for nested in (ordered["properties"]["properties"], ordered["$defs"]["properties"], ordered["items"][0]):
        assert nested["propertyOrdering"] == ["z", "a"]
    assert "propertyOrdering" not in ordered["$defs"] and schema["properties"]["properties"] is inner


def test_a_response_schema_outside_geminis_schema_message_is_refused_as_the_api_refuses_it(
    standin: StandIn,
) -> None:
    server = standin(GeminiGenerateContent())
    schema = {"type": "object", "properties": {"side": {"type": "string"}}, "additionalProperties": False}
    url = f"{server.url}/v1beta/models/{MODEL}:generateContent"
    contents = [{"role": "user", "parts": [{"text": "Which side?"}]}]
    refused = httpx.post(url, json={"contents": contents, "generationConfig": {"responseSchema": schema}})
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert "Unknown name \"additionalProperties\" at 'generation_config.response_schema'" in message
    taken = httpx.post(url, json={"contents": contents, "generationConfig": {"responseJsonSchema": schema}})
    assert taken.is_success


def test_ollama_structured_output_sends_the_schema_as_format(ollama: Setup) -> None:
    body = _structured(ollama)
    assert body["format"]["type"] == "object"
    assert body["format"]["required"] == ["left", "right"]
    assert set(body["format"]["properties"]) == {"left", "right"}


def test_an_invalid_structured_reply_is_re_asked_once_when_asked(each: Setup) -> None:
    answers = iter([json.dumps({"left": "circles"}), json.dumps(ANSWER)])
    each.server.responder = lambda body: next(answers)
    reply = ask(each.agent(reask_unparsed=True), "Solve.", call=CallSpec(task="answer", output_schema=Rule))
    assert len(each.requests()) == 2
    assert (reply.parse_status, reply.parsed) == ("ok", ANSWER)
    assert reply.usage.input_tokens == 2 * TOKENS_IN


# --- replies ------------------------------------------------------------------------------------------


def test_usage_is_read(each: Setup) -> None:
    reply = ask(each.agent(), "hello")
    assert reply.text == "stand-in reply"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (TOKENS_IN, TOKENS_OUT)
    assert (reply.truncated, reply.attempts, reply.parse_status) == (False, 1, "not-requested")


def test_a_reply_cut_at_the_token_limit_is_marked_truncated(each: Setup) -> None:
    each.server.finish_reason = "length"
    reply = ask(each.agent(max_tokens=5), "Talk.")
    assert reply.truncated is True
    assert reply.text == "stand-in reply"
    # The protocol's own reason reached the integration's message, where `is_truncated` reads it.
    field, reason = each.wire.truncation
    inner = each.agent(max_tokens=5).inner  # a fresh SDK client for this event loop
    message = asyncio.run(inner.ainvoke([HumanMessage(content="Talk.")]))
    assert message.response_metadata[field] == reason


# --- faults -------------------------------------------------------------------------------------------


def test_a_429_with_retry_after_is_retried_after_the_wait(each: Setup) -> None:
    each.server.faults.append(
        Fault(429, {"retry-after": str(int(RETRY_AFTER_S))}, '{"error": {"message": "rate limited"}}')
    )
    reply = ask(each.agent(), "hello")
    assert reply.text == "stand-in reply"
    assert reply.attempts == 2
    first, second = each.requests()
    assert second.at - first.at >= RETRY_AFTER_S * 0.9, "Retry-After was not honoured"


def test_a_500_is_retried(each: Setup) -> None:
    each.server.faults.append(Fault(500))
    reply = ask(each.agent(), "hello")
    assert reply.text == "stand-in reply"
    assert reply.attempts == 2
    assert len(each.requests()) == 2


def test_a_bad_request_fails_at_once(each: Setup) -> None:
    each.server.faults.append(Fault(400, body='{"error": {"message": "model does not exist"}}'))
    with pytest.raises(AgentCallError, match=f"^{each.wire.name}:{MODEL}: .*does not exist"):
        ask(each.agent(), "hello")
    assert len(each.requests()) == 1


# --- keys -------------------------------------------------------------------------------------------


@pytest.fixture(params=[name for name, wire in WIRES.items() if wire.key_env is not None])
def keyed(home: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    yield from _setup(request.param, monkeypatch)


def test_the_key_is_sent_in_the_providers_header(keyed: Setup) -> None:
    ask(keyed.agent(), "hello")
    [request] = keyed.requests()
    assert keyed.wire.sent_key(request) == KEY
    assert KEY not in request.path and KEY not in json.dumps(request.body)


def test_ollama_sends_no_credentials(ollama: Setup) -> None:
    ask(ollama.agent(), "hello")
    [request] = ollama.requests()
    assert {k.lower() for k in request.headers} & {"authorization", "x-api-key", "x-goog-api-key"} == set()


def test_a_key_echoed_in_an_error_never_reaches_the_message(keyed: Setup) -> None:
    echo = json.dumps({"error": {"message": f"invalid api key {KEY}", "type": "authentication_error"}})
    keyed.server.faults.append(Fault(401, body=echo))
    with pytest.raises(AgentCallError) as raised:
        ask(keyed.agent(), "hello")
    message = str(raised.value)
    assert KEY not in message
    assert "[redacted]" in message  # the body was reported, with the key taken out
    assert len(keyed.requests()) == 1  # a refused key is not retried


def test_anthropics_image_limit_counts_the_image_in_base64(anthropic: Setup, tmp_path: Path) -> None:
    """5 MB per image as the request carries it: a 4.3 MB noise PNG is 5.8 MB in base64, refused
    before it is sent (the API would answer 400); the same image goes to a provider counting bytes."""
    noise = Image.frombytes("RGB", (1200, 1200), random.Random(7).randbytes(1200 * 1200 * 3))
    noise.save(big := tmp_path / "noise.png")
    assert big.stat().st_size < 5 * 1024 * 1024 < len(base64.b64encode(big.read_bytes()))
    with pytest.raises(
        AgentCallError, match=r"at most 5242880 bytes per image in base64; .* bytes in base64"
    ):
        ask(anthropic.agent(image_max_side=0), "Describe it.", big)
    assert anthropic.requests() == []


def image_body(wire: str, images: list[bytes]) -> dict[str, Any]:
    """A chat request of `images` in the wire's own form, as an SDK writes it."""
    encoded = [base64.b64encode(data).decode() for data in images]
    if wire == "anthropic":
        blocks = [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": e}}
            for e in encoded
        ]
        return {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": blocks}]}
    if wire == "gemini":
        parts = [{"inlineData": {"mimeType": "image/png", "data": e}} for e in encoded]
        return {"contents": [{"role": "user", "parts": parts}]}
    urls = [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{e}"}} for e in encoded]
    return {"model": MODEL, "messages": [{"role": "user", "content": urls}]}


def png(side: int) -> bytes:
    encoded = io.BytesIO()
    Image.new("L", (side, side), 255).save(encoded, "PNG")
    return encoded.getvalue()


@pytest.mark.parametrize(
    ("wire", "images", "refused"),
    [
        ("anthropic", [png(8)] * 101, "Too many images in request: 101 > 100"),
        ("anthropic", [png(2100)] * 21, "exceed max allowed size: 2000 pixels"),
        ("anthropic", [png(8001)], "exceed max allowed size: 8000 pixels"),
        ("anthropic", [b"x" * (4 * 1024 * 1024)], "image exceeds 5 MB maximum"),
        ("gemini", [b"x" * (16 * 1024 * 1024)], "Request payload size exceeds the limit: 20971520 bytes"),
        ("openai", [png(8)] * 501, "Too many images in request: 501 > 500"),
    ],
    ids=[
        "anthropic-count",
        "anthropic-many-large",
        "anthropic-side",
        "anthropic-base64",
        "gemini-payload",
        "openai-count",
    ],
)
def test_the_stand_ins_refuse_images_beyond_each_providers_limits(
    standin: StandIn, wire: str, images: list[bytes], refused: str
) -> None:
    protocol = OpenAIChat() if wire == "openai" else WIRES[wire].protocol()
    server = standin(protocol)
    path = {"anthropic": "/v1/messages", "gemini": f"/v1beta/models/{MODEL}:generateContent"}.get(
        wire, "/v1/chat/completions"
    )
    answered = httpx.post(server.url + path, json=image_body(wire, images), timeout=60)
    assert answered.status_code == 400 and refused in answered.text
    assert httpx.post(server.url + path, json=image_body(wire, [png(8)]), timeout=60).is_success  # within


def test_a_request_beyond_anthropics_many_images_rule_is_refused_before_it_is_sent(
    anthropic: Setup, tmp_path: Path
) -> None:
    """Over 20 images, 2000 px a side at most: 21 panels at 2100 px are refused here, in one line,
    and at the default 1024 px the stand-in, which refuses what the API refuses, takes them."""
    panel = tmp_path / "panel.png"
    panel.write_bytes(png(2100))
    with pytest.raises(AgentCallError, match=r"at most 2000 px a side in a request of more than 20 images"):
        ask(anthropic.agent(image_max_side=2100), "Sort them.", *[panel] * 21)
    assert anthropic.requests() == []
    reply = ask(anthropic.agent(), "Sort them.", *[panel] * 21)
    assert reply.text and len(anthropic.requests()) == 1


def test_a_gemini_request_over_its_20_mb_payload_is_refused_before_it_is_sent(
    gemini: Setup, tmp_path: Path
) -> None:
    """Four 4.3 MB noise images, each within Gemini's 7 MB, are 23 MB together in base64."""
    noise = Image.frombytes("RGB", (1200, 1200), random.Random(7).randbytes(1200 * 1200 * 3))
    noise.save(big := tmp_path / "noise.png")
    with pytest.raises(AgentCallError, match=r"at most 20971520 bytes of images per request in base64"):
        ask(gemini.agent(image_max_side=0), "Compare them.", *[big] * 4)
    assert gemini.requests() == []


def test_gemini_sends_no_temperature_unless_one_is_set(gemini: Setup) -> None:
    """langchain-google-genai defaults to 0.7; "each API's defaults" means none is sent."""
    ask(gemini.agent(), "hello")
    assert "temperature" not in gemini.only_request().get("generationConfig", {})
