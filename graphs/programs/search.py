"""Rules scored on a problem's context panels, and the model-free baseline: an enumerative search.

A rule is scored by the context panels it puts on their true side (true: left). The search lists
threshold conditions `symbol <= t` and `symbol > t`, t halfway between two values the context
panels take, and goes from simple to complex: one condition that separates the sides, then two
joined by `and` or `or`; where none does, the rule with the fewest misplaced panels (then fewer
conditions). Among equals the wider margin wins (the smallest gap around a threshold, relative to
its symbol's range), then the vocabulary's order. Conditions are compared as bit masks over the
panels, so a pair of conditions costs one integer operation.

`ranking="vlp"` ranks rules as Vision-Language Programs does (its `naive_weighted` grammar, the
weighting its README runs): a program's probability is the product of its symbols' weights, each
the share of positive (left) panels it holds on times its precision on the context panels
(`pos / n_pos * pos / (pos + neg)`, 0.01 where it holds on no left panel); among rules as accurate,
the more probable wins, then the simpler. VLP enumerates programs in decreasing probability (heap
search) under a time limit and keeps the most accurate, then most probable; this search reaches every
rule of one or two conditions, so ranking them the same way picks what a heap search finds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

from graphs.programs.language import AllOf, AnyOf, Compare, Comparison, Constant, Number, Rule, Symbol

Side = Literal["left", "right"]
PAIRED_CANDIDATES = 40
"""Conditions (the most accurate) paired with each other when no rule separates the sides."""
ABSENT_WEIGHT = 0.01
"""VLP's weight for a symbol that holds on no positive panel."""
Ranking = Literal["simplest", "vlp"]


@dataclass(frozen=True)
class Panel:
    """A context panel as the search sees it: its side and its symbols."""

    side: Side
    symbols: Mapping[str, float]


@dataclass(frozen=True)
class Scored:
    """A rule and the context panels it misplaces."""

    rule: Rule
    wrong: tuple[str, ...]
    panels: int

    @property
    def correct(self) -> int:
        return self.panels - len(self.wrong)

    @property
    def separates(self) -> bool:
        return not self.wrong


def score(rule: Rule, panels: Mapping[str, Panel]) -> Scored:
    """Which context panels `rule` puts on the wrong side (it holds: left)."""
    wrong = tuple(ref for ref, panel in panels.items() if rule.holds(panel.symbols) != (panel.side == "left"))
    return Scored(rule, wrong, len(panels))


@dataclass(frozen=True)
class _Condition:
    rule: Comparison
    mask: int
    margin: float
    order: int
    weight: float = 1.0
    """VLP's weight of the condition as a symbol of its grammar."""


def vlp_weight(holds_left: int, holds_right: int, left: int, right: int) -> float:
    """VLP's `naive_weighted` likelihood of a symbol: its share of the positive panels times its
    precision; 0.01 where it holds on no positive panel."""
    if holds_left == 0:
        return ABSENT_WEIGHT
    return holds_left / left * holds_left / (holds_left + holds_right)


def _conditions(panels: Sequence[Panel], vocabulary: Sequence[str]) -> list[_Condition]:
    """Every threshold condition, one per distinct mask (the first in vocabulary order, widest margin)."""
    found: dict[int, _Condition] = {}
    for order, name in enumerate(vocabulary):
        values = [panel.symbols.get(name, 0.0) for panel in panels]
        distinct = sorted(set(values))
        spread = (distinct[-1] - distinct[0]) or 1.0
        for low, high in itertools.pairwise(distinct):
            threshold = round((low + high) / 2, 6)
            below = sum(1 << i for i, value in enumerate(values) if value <= threshold)
            everyone = (1 << len(values)) - 1
            margin = (high - low) / 2 / spread
            for compare, mask in (("<=", below), (">", everyone & ~below)):
                kept = found.get(mask)
                if kept is None or margin > kept.margin:  # equal margins: the earlier symbol stays
                    rule = Comparison(Symbol(name), cast(Compare, compare), Number(threshold))
                    found[mask] = _Condition(rule, mask, margin, order)
    return list(found.values())


@dataclass(frozen=True)
class _Candidate:
    rule: Rule
    mask: int
    conditions: int
    margin: float
    order: int
    probability: float
    """The product of its conditions' VLP weights."""


def _single(c: _Condition) -> _Candidate:
    return _Candidate(c.rule, c.mask, 1, c.margin, c.order, c.weight)


def _joined(a: _Condition, b: _Condition) -> list[_Candidate]:
    """`a and b`, `a or b`."""
    margin, order, probability = min(a.margin, b.margin), min(a.order, b.order), a.weight * b.weight
    return [
        _Candidate(AllOf((a.rule, b.rule)), a.mask & b.mask, 2, margin, order, probability),
        _Candidate(AnyOf((a.rule, b.rule)), a.mask | b.mask, 2, margin, order, probability),
    ]


def search(panels: Mapping[str, Panel], vocabulary: Sequence[str], ranking: Ranking = "simplest") -> Scored:
    """The best rule over `vocabulary` on the context panels: one that separates them if any does
    (the simplest, or with `ranking="vlp"` the most probable under VLP's weights), else the most
    accurate."""
    ordered = list(panels.values())
    left = sum(1 << i for i, panel in enumerate(ordered) if panel.side == "left")
    everyone = (1 << len(ordered)) - 1
    lefts, rights = left.bit_count(), len(ordered) - left.bit_count()
    conditions = [
        replace(
            c, weight=vlp_weight((c.mask & left).bit_count(), (c.mask & ~left).bit_count(), lefts, rights)
        )
        for c in _conditions(ordered, vocabulary)
    ]
    singles = [_single(c) for c in conditions]

    def misplaced(candidate: _Candidate) -> int:
        return bin((candidate.mask ^ left) & everyone).count("1")

    def rank(candidate: _Candidate) -> tuple[float, ...]:
        simplest = (candidate.conditions, -candidate.margin, candidate.order)
        if ranking == "vlp":
            return misplaced(candidate), -candidate.probability, *simplest
        return misplaced(candidate), *simplest

    exact = [c for c in singles if c.mask == left]
    if not exact:  # pairs that can separate: two conditions on every left panel, or two on left ones only
        covering = [c for c in conditions if c.mask & left == left]
        inside = [c for c in conditions if c.mask & ~left == 0]
        pairs = [j for a, b in itertools.combinations(covering, 2) for j in _joined(a, b)]
        pairs += [j for a, b in itertools.combinations(inside, 2) for j in _joined(a, b)]
        exact = [c for c in pairs if c.mask == left]
    if not exact:  # no rule separates: the most accurate single condition or pair of the best ones
        best = sorted(conditions, key=lambda c: (misplaced(_single(c)), c.order))
        pairs = [j for a, b in itertools.combinations(best[:PAIRED_CANDIDATES], 2) for j in _joined(a, b)]
        exact = singles + pairs
    if not exact:  # no symbol takes two values on the context panels: any rule is a guess
        return score(Constant(True), panels)
    return score(min(exact, key=rank).rule, panels)
