"""Token prices per model, so every reply carries its cost; an unknown price stays unknown.

The built-in table (`prices.json`, USD per million tokens) can be overridden or
extended with a JSON file of the same shape named by `$BONGARD_PRICES`, or per
agent with `-M price_input=... -M price_output=...`. Keys are agent specs and
may use shell wildcards (`llamacpp:*`).
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


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input_per_mtok + usage.output_tokens * self.output_per_mtok
        ) / PER_MILLION


def _read(text: str) -> dict[str, Price]:
    table = json.loads(text)
    return {
        spec: Price(float(entry["input_per_mtok"]), float(entry["output_per_mtok"]))
        for spec, entry in table.items()
        if not spec.startswith("_")
    }


def price_table() -> dict[str, Price]:
    """The built-in prices, overridden by `$BONGARD_PRICES` if it names a file."""
    table = _read(files("agents").joinpath("prices.json").read_text(encoding="utf-8"))
    override = os.environ.get(PRICES_ENV)
    if override:
        table.update(_read(Path(override).read_text(encoding="utf-8")))
    return table


def find_price(spec: str, table: dict[str, Price] | None = None) -> Price | None:
    """The price of an agent spec: an exact entry first, then the longest matching wildcard."""
    table = price_table() if table is None else table
    if spec in table:
        return table[spec]
    matches = [pattern for pattern in table if fnmatch.fnmatchcase(spec, pattern)]
    return table[max(matches, key=len)] if matches else None
