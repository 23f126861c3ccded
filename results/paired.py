"""Paired tests on the same problems: does strategy A beat strategy B for one model, or only look so?

Two cells of a grid answer the same problems, so they are compared problem by problem, not by
their two accuracies: only the problems one solved and the other did not (the discordant pairs,
`a_only` and `b_only`) say anything about which is better. The exact McNemar test asks how
likely so lopsided a split of the discordant pairs is when neither cell is better: a two-sided
binomial test of `a_only` out of `a_only + b_only` at one half. A comparison runs many such tests
(every pair of strategies for each model, every pair of models for each strategy), so their
p-values are corrected together by Holm's step-down method, which holds the chance of any false
"better" across the whole family at 5 % without assuming the tests independent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy.stats import binomtest, norm

CORRECTION = "Holm (step-down), over every paired test of the comparison"
ALPHA = 0.05


@dataclass(frozen=True)
class PairedTest:
    """One cell against another on the problems both scored."""

    first: str
    second: str
    family: str
    """What the two share (`model X` or `strategy Y` on a dataset): the axis they differ on."""
    n: int
    first_only: int
    """Problems the first solved and the second did not."""
    second_only: int
    p: float
    """Exact McNemar, two-sided."""
    p_holm: float = 1.0
    """`p` after Holm's correction over the comparison's tests."""

    @property
    def difference(self) -> float:
        """The first's accuracy minus the second's, on the shared problems."""
        return (self.first_only - self.second_only) / self.n if self.n else 0.0

    def interval(self) -> tuple[float, float]:
        """A 95% interval of `difference`: Wald's for paired proportions (Agresti, 2002, 10.1)."""
        if not self.n:
            return (0.0, 0.0)
        discordant, net = self.first_only + self.second_only, self.first_only - self.second_only
        spread = norm.ppf(0.975) * math.sqrt(max(discordant - net * net / self.n, 0.0)) / self.n
        return (self.difference - spread, self.difference + spread)

    @property
    def significant(self) -> bool:
        return self.p_holm < ALPHA


def mcnemar_exact(first_only: int, second_only: int) -> float:
    """The two-sided exact McNemar p-value of the discordant counts (1 when there are none)."""
    discordant = first_only + second_only
    if discordant == 0:
        return 1.0
    return float(binomtest(min(first_only, second_only), discordant, 0.5).pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the order given: the k-th smallest times (m - k + 1), made
    non-decreasing, capped at 1."""
    order = sorted(range(len(p_values)), key=lambda index: p_values[index])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def paired_test(first: str, second: str, family: str, solved: Mapping[str, Mapping[str, bool]]) -> PairedTest:
    """`first` against `second` on the problems both scored (`solved[cell][problem]`)."""
    shared = sorted(solved[first].keys() & solved[second].keys())
    first_only = sum(solved[first][p] and not solved[second][p] for p in shared)
    second_only = sum(solved[second][p] and not solved[first][p] for p in shared)
    return PairedTest(
        first, second, family, len(shared), first_only, second_only, mcnemar_exact(first_only, second_only)
    )


def corrected(tests: Sequence[PairedTest]) -> list[PairedTest]:
    """The tests with their Holm-corrected p-values, as one family."""
    adjusted = holm([test.p for test in tests])
    return [
        PairedTest(t.first, t.second, t.family, t.n, t.first_only, t.second_only, t.p, p)
        for t, p in zip(tests, adjusted, strict=True)
    ]
