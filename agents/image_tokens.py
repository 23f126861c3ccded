"""How many input tokens an image costs, by each provider's published rule, for the experiment plan.

The rules, as the providers publish them (each unit-tested against their worked examples):

- **OpenAI, tiles** (GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o1, o3 and OpenAI-protocol servers of unknown
  models): with `detail` high (and `auto`, which the toolkit leaves to the API and which bills as
  high for images over 512 px), the image is fitted into 2048 x 2048, then scaled so its shorter
  side is 768 px (never up), and costs a base plus a price per 512 px tile covering it; `low`
  costs the base alone. Base and tile prices depend on the model (85 + 170 for GPT-4o).
- **OpenAI, patches** (gpt-4.1-mini, gpt-4.1-nano, o4-mini, gpt-5-mini, gpt-5-nano): 32 px patches
  covering the image, at most 1536 (a larger image is scaled down to fit), times the model's
  multiplier.
- **Anthropic**: width x height / 750, after scaling the image down until its long edge is at
  most 1568 px and it costs at most about 1600 tokens.
- **Gemini 2.x**: 258 tokens when both sides are at most 384 px, else 258 per 768 x 768 tile.
  **Gemini 3**: a fixed budget per image by media resolution, 1120 at its default (high).

Providers that publish no rule (Ollama, llama.cpp, vLLM models) are estimated with the OpenAI tile
rule and said so: they are free here, so only the context length depends on it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

OPENAI_TILES: tuple[tuple[str, int, int], ...] = (
    ("gpt-4o-mini", 2833, 5667),
    ("gpt-5", 70, 140),
    ("o1", 75, 150),
    ("o3", 75, 150),
    ("computer-use", 65, 129),
    ("", 85, 170),  # GPT-4o, GPT-4.1, GPT-4.5, GPT-4 Turbo, and any other model
)
"""Model prefix -> (base tokens, tokens per 512 px tile), first match wins."""
OPENAI_PATCHES: tuple[tuple[str, float], ...] = (
    ("gpt-4.1-mini", 1.62),
    ("gpt-4.1-nano", 2.46),
    ("gpt-5-mini", 1.62),
    ("gpt-5-nano", 2.46),
    ("o4-mini", 1.72),
)
"""Model prefix -> tokens per 32 px patch, for the models OpenAI bills by patches."""
PATCH_SIDE, MAX_PATCHES = 32, 1536
ANTHROPIC_PIXELS_PER_TOKEN, ANTHROPIC_LONG_EDGE, ANTHROPIC_MAX_TOKENS = 750, 1568, 1600
GEMINI_TILE_TOKENS, GEMINI_SMALL_SIDE, GEMINI_TILE_SIDE = 258, 384, 768
GEMINI_3_IMAGE_TOKENS = 1120


@dataclass(frozen=True)
class ImageRule:
    """A provider's rule for one model: `tokens(width, height)` and its name, as the plan states it."""

    name: str
    tokens: Callable[[int, int], int]


def openai_tiles(width: int, height: int, base: int = 85, per_tile: int = 170, detail: str = "high") -> int:
    if detail == "low":
        return base
    fit = min(1.0, 2048 / max(width, height))
    shrink = min(1.0, 768 / (min(width, height) * fit))
    scale = fit * shrink
    return base + per_tile * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


def openai_patches(width: int, height: int, multiplier: float = 1.0) -> int:
    patches = math.ceil(width / PATCH_SIDE) * math.ceil(height / PATCH_SIDE)
    if patches > MAX_PATCHES:
        shrink = math.sqrt(MAX_PATCHES * PATCH_SIDE**2 / (width * height))
        across, down = width * shrink / PATCH_SIDE, height * shrink / PATCH_SIDE
        shrink *= min(math.floor(across) / across, math.floor(down) / down)  # whole patches, within the cap
        patches = math.ceil(int(width * shrink) / PATCH_SIDE) * math.ceil(int(height * shrink) / PATCH_SIDE)
    return math.ceil(patches * multiplier)


def anthropic_pixels(width: int, height: int) -> int:
    scale = min(
        1.0,
        ANTHROPIC_LONG_EDGE / max(width, height),
        math.sqrt(ANTHROPIC_MAX_TOKENS * ANTHROPIC_PIXELS_PER_TOKEN / (width * height)),
    )
    return math.ceil(int(width * scale) * int(height * scale) / ANTHROPIC_PIXELS_PER_TOKEN)


def gemini_tiles(width: int, height: int) -> int:
    if width <= GEMINI_SMALL_SIDE and height <= GEMINI_SMALL_SIDE:
        return GEMINI_TILE_TOKENS
    return GEMINI_TILE_TOKENS * math.ceil(width / GEMINI_TILE_SIDE) * math.ceil(height / GEMINI_TILE_SIDE)


def image_rule(provider: str, model: str) -> ImageRule:
    """The rule the plan prices a model's images by (`model` without its `@server`)."""
    name = model.lower().rsplit("/", 1)[-1]
    if provider == "anthropic":
        return ImageRule("Anthropic: width x height / 750", anthropic_pixels)
    if provider == "gemini":
        if name.startswith("gemini-3"):
            return ImageRule(
                f"Gemini 3: {GEMINI_3_IMAGE_TOKENS} per image", lambda w, h: GEMINI_3_IMAGE_TOKENS
            )
        return ImageRule("Gemini: 258 per 768 px tile", gemini_tiles)
    for prefix, multiplier in OPENAI_PATCHES:
        if name.startswith(prefix):
            return ImageRule(
                f"OpenAI: 32 px patches x {multiplier}",
                functools.partial(openai_patches, multiplier=multiplier),
            )
    base, per_tile = next((b, t) for prefix, b, t in OPENAI_TILES if name.startswith(prefix))
    assumed = "" if provider in ("openai", "openai-compatible") else f" (assumed: {provider} publishes none)"
    return ImageRule(
        f"OpenAI: {base} + {per_tile} per 512 px tile{assumed}",
        lambda w, h: openai_tiles(w, h, base, per_tile),
    )
