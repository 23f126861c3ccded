"""Intervals that fit the data: problems are independent, the test images of one problem are not."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy.stats import binomtest

from results.intervals import clustered_wilson, design_effect, wilson
from results.report import comparison_table
from results.report_rows import UNSOLVED_COLUMNS


@pytest.mark.parametrize(("k", "n"), [(0, 3), (3, 3), (71, 100), (142, 200), (1, 2), (130, 200), (7, 12)])
def test_the_wilson_interval_is_scipys(k: int, n: int) -> None:
    interval = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson(k, n) == (round(interval.low, 3), round(interval.high, 3))


@pytest.mark.parametrize(("k", "n"), [(35.5, 50.0), (0.0, 7.3), (7.3, 7.3), (71.0, 100.0), (12.25, 40.5)])
def test_with_an_effective_sample_size_it_is_statsmodels(k: float, n: float) -> None:
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert wilson(k, n) == (round(float(low), 3), round(float(high), 3))


def problems_of(both_right: int, one_right: int, none_right: int) -> pd.DataFrame:
    """An images-to-sides run's problems frame: two test images each, right as given."""
    rights = [2] * both_right + [1] * one_right + [0] * none_right
    return pd.DataFrame(
        {
            "run_id": "r",
            "strategy": "images-to-sides",
            "model": "m",
            "dataset": "bongard-classic",
            "problem": [f"bongard-classic/{i}" for i in range(1, len(rights) + 1)],
            "scored": 1,
            "failed": False,
            "unanswered": False,
            "solved": [int(r == 2) for r in rights],
            **dict.fromkeys(UNSOLVED_COLUMNS.values(), 0),
            "tokens": 0,
            "cost_usd": 0.0,
            "judge_cost_usd": 0.0,
            "images": 2,
            "images_right": rights,
        }
    )


def test_an_all_or_nothing_run_has_an_image_interval_as_wide_as_its_problem_interval() -> None:
    """71 problems both right, 29 both wrong: 142 of 200 images, but only 100 independent decisions."""
    [row] = comparison_table(problems_of(71, 0, 29)).to_dict("records")
    assert (row["images_right"], row["images"], row["image_accuracy"]) == (142, 200, 0.71)
    assert (row["image_accuracy_low"], row["image_accuracy_high"]) == (
        row["accuracy_low"],
        row["accuracy_high"],
    )
    independent_low, independent_high = wilson(142, 200)
    assert independent_low is not None and independent_high is not None
    widths = (row["image_accuracy_high"] - row["image_accuracy_low"], independent_high - independent_low)
    assert widths[0] / widths[1] == pytest.approx(2**0.5, abs=0.02)  # the measured ~1.4 times


def test_images_decided_apart_keep_the_independent_interval() -> None:
    """One image right and one wrong in every problem: no clustering to correct for (effect 1)."""
    [row] = comparison_table(problems_of(0, 50, 0)).to_dict("records")
    assert (row["image_accuracy_low"], row["image_accuracy_high"]) == wilson(50, 100)


def test_the_design_effect_is_the_cluster_robust_over_the_independent_variance() -> None:
    right, total = [2, 2, 1, 0, 2], [2, 2, 2, 2, 2]
    rate = 7 / 10
    clustered = sum((r - rate * t) ** 2 for r, t in zip(right, total, strict=True)) / 10**2
    assert design_effect(right, total) == pytest.approx(clustered / (rate * (1 - rate) / 10))
    assert design_effect([2, 2], [2, 2]) == 2  # all right: the clusters taken as wholly correlated
    low, high = clustered_wilson(right, total)
    effective = 10 / design_effect(right, total)
    assert (low, high) == wilson(rate * effective, effective)
    assert clustered_wilson([], []) == (None, None)
