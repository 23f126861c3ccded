"""Each provider's image-token rule against the worked examples it publishes, and the tokenizer the
plan picks for each model's text."""

import pytest

from agents.image_tokens import anthropic_pixels, gemini_tiles, image_rule, openai_patches, openai_tiles
from agents.text_tokens import text_counter


def test_openai_tiles_match_the_vision_guide_examples() -> None:
    # OpenAI's images and vision guide, "Calculating costs": GPT-4o, detail high and low.
    assert openai_tiles(1024, 1024) == 765  # 768 x 768 after scaling: 4 tiles, 85 + 4 x 170
    assert openai_tiles(2048, 4096) == 1105  # 1024 x 2048, then 768 x 1536: 6 tiles
    assert openai_tiles(4096, 8192, detail="low") == 85
    assert openai_tiles(104, 104) == 255  # a classic panel is never scaled up: one tile


def test_openai_patches_match_the_vision_guide_examples() -> None:
    # The same guide, for the models billed by 32 px patches (gpt-4.1-mini, o4-mini...).
    assert openai_patches(1024, 1024) == 1024  # 32 x 32 patches, under the 1536 cap
    assert openai_patches(1800, 2400) == 1452  # scaled to 1056 x 1408: 33 x 44 patches
    assert openai_patches(1024, 1024, multiplier=1.62) == 1659  # gpt-4.1-mini's multiplier


def test_anthropic_pixels_match_the_vision_page_examples() -> None:
    # Anthropic's vision page: tokens = width x height / 750 (its table, rounded up).
    assert anthropic_pixels(200, 200) == 54
    assert anthropic_pixels(1000, 1000) == 1334
    assert anthropic_pixels(1092, 1092) == 1590
    assert anthropic_pixels(3000, 3000) <= 1600  # scaled down to the size limit first


def test_gemini_tiles_follow_the_token_guide() -> None:
    # Gemini's token guide: both sides at most 384 px is 258 tokens, else 258 per 768 px tile.
    assert gemini_tiles(384, 384) == 258
    assert gemini_tiles(768, 768) == 258
    assert gemini_tiles(1000, 500) == 2 * 258


@pytest.mark.parametrize(
    ("provider", "model", "tokens", "named"),
    [
        ("openai", "gpt-4o", 765, "85 + 170"),
        ("openai", "gpt-4o-mini", 2833 + 4 * 5667, "2833 + 5667"),
        ("openai", "gpt-5", 70 + 4 * 140, "70 + 140"),
        ("openai", "o3", 75 + 4 * 150, "75 + 150"),
        ("openai", "gpt-4.1-mini", 1659, "patches x 1.62"),
        ("anthropic", "claude-sonnet-4-5", 1399, "/ 750"),
        ("gemini", "gemini-2.5-flash", 2 * 2 * 258, "768 px tile"),
        ("gemini", "gemini-3-pro-preview", 1120, "Gemini 3"),
        ("ollama", "llava", 5 * 576, "LLaVA-1.6"), ("vllm", "Qwen/Qwen2-VL-7B-Instruct", 765, "assumed"),
    ],
)  # fmt: skip
def test_each_model_is_priced_by_its_providers_rule(
    provider: str, model: str, tokens: int, named: str
) -> None:
    rule = image_rule(provider, model)
    assert rule.tokens(1024, 1024) == tokens and named in rule.name


def test_the_text_counter_is_a_published_tokenizer_where_there_is_one() -> None:
    turbo = text_counter("openai-compatible", "gpt-4-turbo")
    assert turbo.name.startswith("tiktoken cl100k_base") and "standing in" not in turbo.name
    assert turbo.count("How do the two sides differ?") == 7
    assert (turbo.message_overhead, turbo.reply_priming) == (3, 3)
    assert "o200k_base" in text_counter("openai", "gpt-4o").name  # its own, or cl100k standing in, said so
    claude = text_counter("anthropic", "claude-sonnet-4-5")
    assert claude.name.startswith("4 characters a token") and claude.count("x" * 9) == 3


@pytest.mark.parametrize(
    ("model", "side", "tokens"),
    [
        ("qwen2.5vl:7b", 104, 4 * 4 + 2), ("qwen2.5vl:7b", 1024, 37 * 37 + 2), ("qwen2-vl", 28, 3),
        ("llava:13b", 104, 2 * 576), ("llava:13b", 1024, 5 * 576), ("gemma3:4b", 1024, 256),
        ("llama3.2-vision", 104, 1601), ("llama3.2-vision", 1024, 4 * 1601),
        ("some-new-vlm", 104, 2 * 576), ("some-new-vlm", 1024, 5 * 576),
    ],
)  # fmt: skip
def test_ollama_models_count_images_by_their_familys_encoder(model: str, side: int, tokens: int) -> None:
    """Qwen-VL: 28 px a token (a 104 px classic panel 16 + 2, a 1024 px photo 1,369 + 2); LLaVA-1.6:
    576 and 576 a 336 px tile up to 4; Gemma 3: 256; Llama 3.2 Vision: 1,601 a 560 px tile up to 4;
    an unknown family the largest of Qwen, LLaVA and Gemma."""
    assert image_rule("ollama", model).tokens(side, side) == tokens
