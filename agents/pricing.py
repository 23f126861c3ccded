"""Token prices per model, so every reply carries its cost; an unknown price stays unknown.

Where a price comes from, first found first:

1. per agent, `-M price_input=... -M price_output=...` (USD per million tokens);
2. a JSON file named by `$BONGARD_PRICES` (`{"SPEC": {"input_per_mtok": ..., "output_per_mtok": ...}}`,
   specs may use shell wildcards such as `openai-compatible:*@http://my-lab:8000/v1`);
3. the toolkit's own `prices.json`: the agents that cost nothing per token (the offline agents,
   models served here by llama.cpp, Ollama or vLLM);
4. the providers' published prices, kept by the pydantic team in `genai-prices`: dated ids, cached
   input at its own rate, prices that change with the prompt's length, as published.

A model none of them knows has no price, and its cost is unknown (None), never $0; so is the cost
of a reply that came without usage from a model that has a price.
"""

from __future__ import annotations

import fnmatch
import json
import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from agents.call import Usage

PRICES_ENV = "BONGARD_PRICES"
PER_MILLION = 1_000_000
PUBLISHED_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gemini": "google"}
"""Our provider names -> genai-prices' provider ids, for the providers whose list prices apply."""


@dataclass(frozen=True)
class Price:
    """A flat price, USD per million input and output tokens (cached input at the full rate)."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Usage) -> float | None:
        free = self.input_per_mtok == self.output_per_mtok == 0
        if not usage.reported and not free:
            return None
        return (
            usage.input_tokens * self.input_per_mtok + usage.output_tokens * self.output_per_mtok
        ) / PER_MILLION


@dataclass(frozen=True)
class PublishedPrice:
    """A model's published price, looked up in genai-prices for each reply's usage; `batch`: its
    batch price (genai-prices' `processing: batch` variant, where it lists one)."""

    provider_id: str
    model_ref: str
    batch: bool = False

    def cost(self, usage: Usage) -> float | None:
        if not usage.reported:
            return None
        from genai_prices import Usage as PricedUsage
        from genai_prices import calc_price

        priced = PricedUsage(
            input_tokens=usage.input_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
        )
        context = {"processing": "batch"} if self.batch else None
        calculated = calc_price(priced, self.model_ref, provider_id=self.provider_id, price_context=context)
        return float(calculated.total_price)


BATCH_DISCOUNT = 0.5
"""OpenAI's Batch API, Anthropic's Message Batches and Gemini's Batch Mode each bill half the
standard price (their pricing pages), cache reads and writes included."""


@dataclass(frozen=True)
class DiscountedPrice:
    """A price without a listed batch variant (one set with `-M price_*`, a file's, a model
    genai-prices lists no batch price for): the provider's published batch discount applied to it."""

    standard: Price | PublishedPrice
    discount: float = BATCH_DISCOUNT

    def cost(self, usage: Usage) -> float | None:
        cost = self.standard.cost(usage)
        return None if cost is None else cost * self.discount


Pricing = Price | PublishedPrice | DiscountedPrice
"""A model's price: `cost(usage)` gives USD for one reply, None where it cannot be known."""


def _read(text: str) -> dict[str, Price]:
    table = json.loads(text)
    return {
        spec: Price(float(entry["input_per_mtok"]), float(entry["output_per_mtok"]))
        for spec, entry in table.items()
        if not spec.startswith("_")
    }


def price_table() -> dict[str, Price]:
    """The toolkit's own prices (the free agents), overridden by `$BONGARD_PRICES` if it names a file."""
    table = _read(files("agents").joinpath("prices.json").read_text(encoding="utf-8"))
    override = os.environ.get(PRICES_ENV)
    if override:
        table.update(_read(Path(override).read_text(encoding="utf-8")))
    return table


def published_price(spec: str) -> PublishedPrice | None:
    """The provider's list price of a spec's model, where genai-prices knows it."""
    provider, _, model = spec.partition(":")
    provider_id = PUBLISHED_PROVIDERS.get(provider)
    if provider_id is None or not model:
        return None
    from genai_prices import Usage as PricedUsage
    from genai_prices import calc_price

    try:
        calc_price(PricedUsage(input_tokens=0, output_tokens=0), model, provider_id=provider_id)
    except LookupError:
        return None
    return PublishedPrice(provider_id, model)


def find_price(spec: str, table: dict[str, Price] | None = None) -> Pricing | None:
    """The price of an agent spec: the table's exact entry, its longest matching wildcard, else the
    published price; None where no one knows it."""
    table = price_table() if table is None else table
    if spec in table:
        return table[spec]
    matches = [pattern for pattern in table if fnmatch.fnmatchcase(spec, pattern)]
    return table[max(matches, key=len)] if matches else published_price(spec)


def batch_price(price: Pricing | None) -> Pricing | None:
    """What a reply costs through the provider's batch API: the listed batch price of a published
    model, else the provider's published discount on the price given."""
    if isinstance(price, PublishedPrice):
        from genai_prices import Usage as PricedUsage
        from genai_prices import calc_price

        probe = PricedUsage(input_tokens=PER_MILLION, output_tokens=PER_MILLION)
        listed = calc_price(
            probe, price.model_ref, provider_id=price.provider_id, price_context={"processing": "batch"}
        )
        standard = calc_price(probe, price.model_ref, provider_id=price.provider_id)
        if listed.total_price != standard.total_price:
            return PublishedPrice(price.provider_id, price.model_ref, batch=True)
    return DiscountedPrice(price) if isinstance(price, Price | PublishedPrice) else price
