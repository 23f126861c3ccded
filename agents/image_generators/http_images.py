"""`openai-images:MODEL`: any server speaking the OpenAI Images protocol, OpenAI's own by default.

`POST {base_url}/images/generations` with the model, the prompt, one image, a
square size and base64 output; the image comes back as `data[0].b64_json`.
The protocol has no negative prompt, so it is folded into the prompt as an
"Avoid: ..." clause. Retries (429, 5xx, timeouts, Retry-After) and the
per-provider concurrency gate are the toolkit's shared ones, not our own.

OpenAI's own API refuses fields it does not know, so there the request leaves
out `seed` (it has none) and, for the `gpt-image-*` models, `response_format`
(they always answer in base64); its models draw only certain squares, so the
nearest one is asked for and the reply scaled to the size wanted.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import ipaddress
import json
import os
from typing import Any
from urllib.parse import urlsplit

import httpx
from PIL import Image, ImageOps, UnidentifiedImageError

from agents.image_generators.base import DEFAULT_SIZE, GeneratorError, GeneratorParams, GeneratorProvider
from agents.limits import Endpoint, RateLimits, endpoint_slot
from agents.retry import RetryPolicy, with_retries

NAME = "openai-images"
OPENAI_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"
OPENAI_KEY = "OPENAI_API_KEY"
COMPATIBLE_KEY = "OPENAI_COMPATIBLE_API_KEY"
DEFAULT_CONCURRENCY = 4
SERVER_TEXT_LIMIT = 300
OPENAI_SQUARES = {"dall-e-2": (256, 512, 1024), "dall-e-3": (1024,), "gpt-image": (1024,)}
"""Square sizes OpenAI's image models accept, by model-name prefix."""


def _host(base_url: str) -> str:
    return (urlsplit(base_url).hostname or "").lower()


def is_loopback(base_url: str) -> bool:
    host = _host(base_url)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def key_variables(params: GeneratorParams) -> tuple[str, ...]:
    """The variable holding the key for the server: OpenAI's key goes to OpenAI only; a server
    on this machine may need none."""
    base_url = params.base_url or OPENAI_URL
    if _host(base_url) == OPENAI_HOST:
        return (OPENAI_KEY,)
    return () if is_loopback(base_url) else (COMPATIBLE_KEY,)


def compose_prompt(positive: str, negative: str) -> str:
    """The positive prompt, then the negative one as an explicit instruction of what to leave out."""
    positive, negative = positive.strip(), negative.strip()
    return f"{positive.rstrip('.')}. Avoid: {negative}" if negative else positive


def wire_size(model: str, size: int, openai: bool) -> int:
    """The square side to ask for: `size` itself, except where OpenAI's model cannot draw it."""
    squares = next((s for prefix, s in OPENAI_SQUARES.items() if openai and model.startswith(prefix)), None)
    if squares is None:
        return size
    return next((side for side in squares if side >= size), squares[-1])


def request_body(model: str, prompt: str, size: int, seed: int, *, openai: bool) -> dict[str, Any]:
    side = wire_size(model, size, openai)
    body: dict[str, Any] = {"model": model, "prompt": prompt, "n": 1, "size": f"{side}x{side}"}
    if not (openai and model.startswith("gpt-image")):
        body["response_format"] = "b64_json"
    if not openai:
        body["seed"] = seed
    return body


def decode_image(reply: Any, generator: str) -> Image.Image:
    """The first image of a reply, or a GeneratorError saying what the reply lacked."""
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise GeneratorError(generator, "the reply holds no image (no non-empty 'data' list)")
    encoded = data[0].get("b64_json")
    if not isinstance(encoded, str) or not encoded:
        got = ", ".join(sorted(data[0])) or "nothing"
        raise GeneratorError(generator, f"the reply's image has no 'b64_json' (it has: {got})")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise GeneratorError(generator, "the reply's 'b64_json' is not valid base64") from None
    try:
        image = Image.open(io.BytesIO(raw))
        image.load()
    except (UnidentifiedImageError, OSError):
        raise GeneratorError(
            generator, f"the reply's 'b64_json' is not an image ({len(raw)} bytes)"
        ) from None
    return image


def _server_says(response: httpx.Response) -> str:
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text
    return str(message)[:SERVER_TEXT_LIMIT]


class OpenAIImagesGenerator:
    """One model behind an OpenAI Images endpoint."""

    def __init__(self, model: str, params: GeneratorParams) -> None:
        self.model = model
        self.params = params
        self.base_url = (params.base_url or OPENAI_URL).rstrip("/")
        self.spec = f"{NAME}:{model}"
        self.openai = _host(self.base_url) == OPENAI_HOST
        self.endpoint = Endpoint(NAME, self.base_url)
        self.limits = RateLimits(
            concurrency=params.concurrency or DEFAULT_CONCURRENCY,
            requests_per_minute=params.requests_per_minute,
        )
        self.retry_policy = RetryPolicy(max_attempts=params.max_attempts, max_total_s=params.max_total_s)

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(OPENAI_KEY if self.openai else COMPATIBLE_KEY)
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def generate(
        self, positive: str, negative: str, *, seed: int, size: int = DEFAULT_SIZE
    ) -> Image.Image:
        body = request_body(self.model, compose_prompt(positive, negative), size, seed, openai=self.openai)
        reply = await self._post(body)
        image = decode_image(reply, self.spec).convert("RGB")
        return (
            image
            if image.size == (size, size)
            else ImageOps.fit(image, (size, size), Image.Resampling.LANCZOS)
        )

    async def _post(self, body: dict[str, Any]) -> Any:
        url, headers, timeout = f"{self.base_url}/images/generations", self._headers(), self.params.timeout_s
        async with httpx.AsyncClient(timeout=timeout) as client:

            async def attempt() -> Any:
                async with endpoint_slot(self.endpoint, self.limits), asyncio.timeout(timeout):
                    response = await client.post(url, json=body, headers=headers)
                    response.raise_for_status()
                    return response.json()

            try:
                return await with_retries(attempt, self.retry_policy)
            except httpx.HTTPStatusError as error:
                status = error.response.status_code
                raise GeneratorError(
                    self.spec, f"the server answered {status}: {_server_says(error.response)}"
                ) from None
            except json.JSONDecodeError:
                raise GeneratorError(self.spec, "the reply is not JSON") from None
            except (httpx.TransportError, TimeoutError) as error:
                reason = f"{type(error).__name__}: {error}".rstrip(": ")
                raise GeneratorError(self.spec, f"no reply from {self.base_url} ({reason})") from None


def build(model: str, params: GeneratorParams) -> OpenAIImagesGenerator:
    return OpenAIImagesGenerator(model, params)


PROVIDER = GeneratorProvider(
    name=NAME,
    summary="an OpenAI Images endpoint: openai-images:MODEL (-M base_url=... for other servers)",
    build=build,
    key_env=(OPENAI_KEY, COMPATIBLE_KEY),
    key_rule=key_variables,
)
