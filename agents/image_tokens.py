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

Open-weight models served by Ollama are counted by their family's published vision encoder, since
the context Ollama is given must hold them (`open_weight_rule`):

- **Qwen2-VL, Qwen2.5-VL, Qwen3-VL**: the image resized to multiples of 28 px (14 px patches merged
  2 x 2), one token per 28 x 28 px, plus its two delimiters.
- **LLaVA-1.6** (Ollama's `llava`): 576 tokens for the whole image at 336 px, and 576 per 336 px
  tile of its grid, at most 4 (2,880 at most).
- **Gemma 3**: 256 per image (resized to 896 x 896; Ollama does no pan and scan).
- **Llama 3.2 Vision**: 1,601 per 560 px tile, at most 4.
- any other model: the largest of the Qwen, LLaVA and Gemma counts, stated as a conservative default.

Other providers that publish no rule (llama.cpp, vLLM models) are estimated with the OpenAI tile
rule and said so: they are free here, so only the context length depends on it.
"""

from __future__ import annotations

import functools
import math
import re
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


QWEN_PATCH, QWEN_DELIMITERS = 28, 2
LLAVA_TILE, LLAVA_TILE_TOKENS, LLAVA_MAX_TILES = 336, 576, 4
GEMMA_3_IMAGE_TOKENS = 256
MLLAMA_TILE, MLLAMA_TILE_TOKENS, MLLAMA_MAX_TILES = 560, 1601, 4


def qwen_patches(width: int, height: int) -> int:
    across, down = (max(1, round(side / QWEN_PATCH)) for side in (width, height))
    return across * down + QWEN_DELIMITERS


def llava_tiles(width: int, height: int) -> int:
    tiles = min(LLAVA_MAX_TILES, math.ceil(width / LLAVA_TILE) * math.ceil(height / LLAVA_TILE))
    return LLAVA_TILE_TOKENS * (1 + tiles)


def mllama_tiles(width: int, height: int) -> int:
    tiles = min(MLLAMA_MAX_TILES, math.ceil(width / MLLAMA_TILE) * math.ceil(height / MLLAMA_TILE))
    return MLLAMA_TILE_TOKENS * tiles


def conservative_open_weight(width: int, height: int) -> int:
    return max(qwen_patches(width, height), llava_tiles(width, height), GEMMA_3_IMAGE_TOKENS)


OPEN_WEIGHT_RULES: tuple[tuple[str, ImageRule], ...] = (
    (r"qwen\d(\.\d)?-?vl", ImageRule("Qwen-VL: one token per 28 x 28 px, plus 2", qwen_patches)),
    (
        r"llama3\.2-vision|mllama",
        ImageRule("Llama 3.2 Vision: 1601 per 560 px tile, at most 4", mllama_tiles),
    ),
    (r"llava", ImageRule("LLaVA-1.6: 576, and 576 per 336 px tile, at most 4", llava_tiles)),
    (r"gemma3", ImageRule(f"Gemma 3: {GEMMA_3_IMAGE_TOKENS} per image", lambda w, h: GEMMA_3_IMAGE_TOKENS)),
)
"""Model-name pattern (searched in the lowercased name) -> its family's rule, first match wins."""
OPEN_WEIGHT_DEFAULT = ImageRule(
    "the largest of the Qwen-VL, LLaVA-1.6 and Gemma 3 counts (a conservative default: the model's "
    "family is not known here)",
    conservative_open_weight,
)


def open_weight_rule(model: str) -> ImageRule:
    """The image rule of an open-weight model served by Ollama, by its family (`OPEN_WEIGHT_RULES`)."""
    name = model.lower()
    return next(
        (rule for pattern, rule in OPEN_WEIGHT_RULES if re.search(pattern, name)), OPEN_WEIGHT_DEFAULT
    )


def image_rule(provider: str, model: str) -> ImageRule:
    """The rule the plan prices a model's images by (`model` without its `@server`)."""
    name = model.lower().rsplit("/", 1)[-1]
    if provider == "ollama":
        return open_weight_rule(model)
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
