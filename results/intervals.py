"""95% intervals for the rates the toolkit reports, fit to how the data was drawn.

A rate over problems (solved / n) has independent trials: a Wilson score interval. A rate over
test images or queries does not: the images of one problem are decided together (under
`images-to-sides` every problem of a run was both-right or both-wrong), so treating them as
independent gives an interval about 1.4 times too narrow. Those rates get the Wilson interval at
the effective sample size: the images divided by Kish's design effect, measured from the
cluster-robust (linearised ratio) variance over problems and never below 1, so the interval is
never narrower than the independent one. Deterministic, unlike a cluster bootstrap, and exact in
the limiting case: a run whose problems are all-or-nothing gets its problems' interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

CONFIDENCE = 0.95
CLUSTERED_METHOD = "Wilson at the effective n (Kish design effect over problems)"
"""How `clustered_wilson` works, in the words reports print beside it."""


def wilson(successes: float, trials: float) -> tuple[float | None, float | None]:
    """The 95% Wilson score interval of a rate; none for no trials. Its closed form, with the normal
    quantile from the standard library: equal to SciPy's and statsmodels' (tested), which cost most
    of a second to import on every command that prints a table, and it takes the non-integer counts
    an effective sample size gives."""
    if trials <= 0:
        return None, None
    z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    rate, spread = successes / trials, z * z / trials
    centre = (rate + spread / 2) / (1 + spread)
    half = z * math.sqrt(rate * (1 - rate) / trials + spread / (4 * trials)) / (1 + spread)
    return round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)


def design_effect(right: Sequence[float], total: Sequence[float]) -> float:
    """Kish's design effect of a ratio over clusters (problems): the cluster-robust variance of
    sum(right) / sum(total) over the variance if every unit were independent, at least 1. Where every
    unit is right (or every one wrong) neither variance says anything, and the clusters are taken as
    wholly correlated: the mean cluster size."""
    clusters = [(float(r), float(t)) for r, t in zip(right, total, strict=True) if t > 0]
    units = sum(t for _, t in clusters)
    if not clusters:
        return 1.0
    rate = sum(r for r, _ in clusters) / units
    if rate in (0.0, 1.0):
        return max(1.0, units / len(clusters))
    clustered = sum((r - rate * t) ** 2 for r, t in clusters) / units**2
    independent = rate * (1 - rate) / units
    return max(1.0, clustered / independent)


def clustered_wilson(right: Sequence[float], total: Sequence[float]) -> tuple[float | None, float | None]:
    """The 95% Wilson interval of sum(right) / sum(total) at the effective sample size, for units
    (images, queries) that come in clusters (problems) decided together."""
    units = float(sum(total))
    if units <= 0:
        return None, None
    effective = units / design_effect(right, total)
    return wilson(float(sum(right)) / units * effective, effective)
