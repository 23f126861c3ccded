"""Reading a prompt the way the offline `shapes` test generator needs: which shapes, how many, how.

Only a small closed vocabulary is understood (shape, number, colour, size,
fill and position words); everything else is ignored. This is a parser for a
deterministic test stand-in, not language understanding.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass, replace

KINDS = (
    "circle", "ellipse", "square", "rectangle", "triangle", "diamond",
    "pentagon", "hexagon", "octagon", "star", "cross", "line", "arrow",
)  # fmt: skip
_SHAPE_SYNONYMS = {"dot": "circle", "oval": "ellipse"}
_IRREGULAR_PLURALS = {"crosses": "cross"}
NUMBERS = {
    "one": 1, "single": 1, "two": 2, "pair": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "no": 0, "zero": 0, "without": 0,
}  # fmt: skip
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "orange": (245, 140, 20),
    "yellow": (235, 200, 0),
    "green": (30, 160, 60),
    "blue": (30, 80, 220),
    "purple": (130, 50, 180),
    "pink": (240, 110, 170),
    "brown": (130, 80, 40),
    "black": (0, 0, 0),
    "grey": (128, 128, 128),
    "white": (215, 215, 215),  # light grey: pure white would vanish on the white canvas
}
_COLOUR_SYNONYMS = {"gray": "grey", "violet": "purple"}
SIZES = {"tiny": 0.07, "small": 0.11, "medium": 0.16, "large": 0.24, "huge": 0.32}
"""Side of a shape's box as a fraction of the canvas side."""
_SIZE_SYNONYMS = {"little": "small", "big": "large", "giant": "huge"}
STYLES = {
    "filled": "filled",
    "solid": "filled",
    "outline": "outline",
    "outlined": "outline",
    "hollow": "outline",
}
REGIONS: dict[str, tuple[float, float, float, float]] = {
    "left": (0.0, 0.0, 0.5, 1.0),
    "right": (0.5, 0.0, 1.0, 1.0),
    "top": (0.0, 0.0, 1.0, 0.5),
    "bottom": (0.0, 0.5, 1.0, 1.0),
    "centre": (0.2, 0.2, 0.8, 0.8),
}
"""Canvas regions as (left, top, right, bottom) fractions."""
_REGION_SYNONYMS = {"upper": "top", "lower": "bottom", "center": "centre", "middle": "centre"}
_CLAUSE_ENDS = {"and", "but", "while", ",", ";", "."}
_TOKEN = re.compile(r"[a-z]+|\d+|[,;.]")


def _shape_word(word: str) -> tuple[str, bool] | None:
    """(kind, plural) for a shape word, else None."""
    if word in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[word], True
    for singular, plural in ((word, False), (word.removesuffix("s"), True)):
        kind = _SHAPE_SYNONYMS.get(singular, singular)
        if kind in KINDS:
            return kind, plural
    return None


def _canonical(word: str, synonyms: dict[str, str], table: Container[str]) -> str | None:
    word = synonyms.get(word, word)
    return word if word in table else None


@dataclass(frozen=True)
class ShapeRequest:
    """One group of shapes the prompt asks for; None leaves an attribute to the seed."""

    kind: str
    count: int | None
    colour: str | None = None
    size: str | None = None
    style: str | None = None
    region: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)


@dataclass
class _Pending:
    count: int | None = None
    colour: str | None = None
    size: str | None = None
    style: str | None = None
    region: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
    said_something: bool = False
    """Whether a modifier was read since the last shape word (so a position word looks ahead)."""

    def request(self, kind: str, plural: bool) -> ShapeRequest:
        """A singular shape word without a number means one; a bare plural leaves it to the seed."""
        count = self.count if self.count is not None else (None if plural else 1)
        return ShapeRequest(kind, count, self.colour, self.size, self.style, self.region)


def _narrow(region: tuple[float, float, float, float], word: str) -> tuple[float, float, float, float]:
    """`region` cut down to the part named by `word`; a contradiction ("left ... right") keeps it."""
    other = REGIONS[word]
    left, top = max(region[0], other[0]), max(region[1], other[1])
    right, bottom = min(region[2], other[2]), min(region[3], other[3])
    return (left, top, right, bottom) if left < right and top < bottom else region


def tokens(prompt: str) -> list[str]:
    return _TOKEN.findall(prompt.lower())


def parse_shapes(prompt: str) -> list[ShapeRequest]:
    """The shape groups a prompt names, in order.

    Number, colour, size and fill words apply to the next shape word; a position
    word applies to the shape just named in the same clause ("a circle on the
    left"), or else to the next one ("on the left, a circle").
    """
    requests: list[ShapeRequest] = []
    pending = _Pending()
    open_index: int | None = None
    for word in tokens(prompt):
        shape = _shape_word(word)
        if word in _CLAUSE_ENDS:
            open_index = None
        elif shape is not None:
            requests.append(pending.request(*shape))
            pending, open_index = _Pending(), len(requests) - 1
        elif (region := _canonical(word, _REGION_SYNONYMS, REGIONS)) is not None:
            if open_index is not None and not pending.said_something:
                last = requests[open_index]
                requests[open_index] = replace(last, region=_narrow(last.region, region))
            else:
                pending.region = _narrow(pending.region, region)
                pending.said_something = True
        else:
            _read_modifier(pending, word)
    return requests


def _read_modifier(pending: _Pending, word: str) -> None:
    if word.isdigit():
        pending.count = int(word)
    elif word in NUMBERS:
        pending.count = NUMBERS[word]
    elif (colour := _canonical(word, _COLOUR_SYNONYMS, COLOURS)) is not None:
        pending.colour = colour
    elif (size := _canonical(word, _SIZE_SYNONYMS, SIZES)) is not None:
        pending.size = size
    elif word in STYLES:
        pending.style = STYLES[word]
    else:
        return
    pending.said_something = True


def named_kinds(prompt: str) -> set[str]:
    """Every shape kind a prompt mentions, whatever is said about it (for negative prompts)."""
    return {shape[0] for word in tokens(prompt) if (shape := _shape_word(word)) is not None}


def named_colours(prompt: str) -> set[str]:
    return {colour for word in tokens(prompt) if (colour := _canonical(word, _COLOUR_SYNONYMS, COLOURS))}
