"""Which concept a fresh basic (bd) or abstract (hd) Bongard-LOGO problem states, from the authors'
shape tables.

The tables (`data/human_designed_shapes.tsv`: each shape's strokes; `..._attributes.tsv`: the
attributes each shape has, 1, lacks, 0, or where they do not apply, -1) are read from the user's
checkout of NVlabs/Bongard-LOGO, never shipped. The authors' scripts take every single shape (or
attribute) and then shape pairs drawn at random (every attribute pair with enough shapes); here
problem i states one shape (attribute) when i is even and a pair when it is odd, drawn from the
problem's own random state, so a small set covers both kinds and a seed fixes each problem alone.
A basic concept's shape needs another of its super class (its negatives swap it for one); an
abstract one needs 7 shapes that have the attribute and 7 that lack it, and a pair 10 shapes in each
of have-both, have-only-the-first and have-only-the-second (the authors' sampler's minimum).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from datasets_io.errors import BongardError
from datasets_io.loaders.logo import IMAGES_PER_SIDE

SHAPES_FILE = "human_designed_shapes.tsv"
ATTRIBUTES_FILE = "human_designed_shapes_attributes.tsv"
PAIR_MINIMUM = 10
"""Shapes the authors' abstract sampler needs in each combination of a pair's two attributes."""


class ShapeTablesError(BongardError):
    """Shape tables that are missing or that the generator cannot read, in one line."""


@dataclass(frozen=True)
class ShapeTables:
    shapes: Path
    attributes: Path

    @classmethod
    def find(cls, where: Path) -> ShapeTables:
        """The two tables in a checkout (`data/`), or in the folder given."""
        folder = where / "data" if (where / "data" / SHAPES_FILE).is_file() else where
        tables = cls(folder / SHAPES_FILE, folder / ATTRIBUTES_FILE)
        for path in (tables.shapes, tables.attributes):
            if not path.is_file():
                raise ShapeTablesError(
                    f"no {path.name} in {where} (the shape tables of a Bongard-LOGO checkout, data/)"
                )
        return tables

    def digests(self) -> dict[str, str]:
        """Each table's SHA-256, so a generated set says which tables made it."""
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (self.shapes, self.attributes)}


def basic_shapes(super_classes: dict[str, str]) -> list[str]:
    """Shapes a basic problem can state: those with another shape of their super class."""
    members: dict[str, int] = {}
    for group in super_classes.values():
        members[group] = members.get(group, 0) + 1
    return [shape for shape, group in super_classes.items() if members[group] > 1]


def abstract_attributes(
    candidates: dict[str, tuple[list[str], list[str]]],
) -> tuple[list[str], list[tuple[str, str]]]:
    """Attributes an abstract problem can state alone, and the pairs it can state together."""
    singles = [
        name
        for name, (having, lacking) in candidates.items()
        if len(having) >= IMAGES_PER_SIDE and len(lacking) >= IMAGES_PER_SIDE
    ]
    pairs = [
        (first, second)
        for first, second in combinations(candidates, 2)
        if _pair_fits(candidates[first], candidates[second])
    ]
    return singles, pairs


def _pair_fits(first: tuple[list[str], list[str]], second: tuple[list[str], list[str]]) -> bool:
    (has_first, lacks_first), (has_second, lacks_second) = first, second
    combined = (
        set(has_first) & set(has_second),
        set(has_first) & set(lacks_second),
        set(lacks_first) & set(has_second),
    )
    return all(len(shapes) >= PAIR_MINIMUM for shapes in combined)


def basic_concept(index: int, shapes: list[str], random: Any) -> list[str]:
    """Basic problem `index`'s shapes: one when `index` is even, else two different ones in table
    order (as the authors pair them), drawn with the problem's own `random` state (numpy's)."""
    if index % 2 == 1 and len(shapes) > 1:
        return [shapes[int(i)] for i in sorted(random.choice(len(shapes), size=2, replace=False))]
    return [shapes[int(random.randint(len(shapes)))]]


def abstract_concept(index: int, singles: list[str], pairs: list[tuple[str, str]], random: Any) -> list[str]:
    """Abstract problem `index`'s attributes: one when `index` is even (or no pair fits), else a pair."""
    if index % 2 == 1 and pairs:
        return list(pairs[int(random.randint(len(pairs)))])
    return [singles[int(random.randint(len(singles)))]]
