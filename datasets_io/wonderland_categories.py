"""Bongard in Wonderland's five categories of the classic problems (003 App. B.2, Table 4).

The paper compares models with humans per category (Fig. 4); `data/wonderland_categories.json`
holds the category of each of the 100 classic problems, keyed by problem number.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

CLASSIC_DATASET = "bongard-classic"


@cache
def _document() -> dict[str, Any]:
    text = files("datasets_io").joinpath("data", "wonderland_categories.json").read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def wonderland_categories() -> tuple[str, ...]:
    """size, concept, number, spatial, same: in the order the paper names them."""
    return tuple(_document()["categories"])


def wonderland_category(dataset: str, problem_id: str) -> str | None:
    """The category of a classic problem by its number; None for a problem of another dataset."""
    category: str | None = _document()["problems"].get(problem_id) if dataset == CLASSIC_DATASET else None
    return category
