"""Agreement statistics for judges: unanimity, Cohen's and Fleiss' kappa, agreement with humans.

The kappas are statsmodels' (the field's reference implementation); the tests check them against
worked examples computed by hand. Where every rating is one label, chance agreement is 1 and
kappa is undefined: NaN here, "undefined" wherever it is printed, never 1.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from judges.errors import JudgeError
from judges.verdict import Verdict, VerdictLabel, decide

LabelMatrix = Sequence[Sequence[VerdictLabel]]
"""One row per judged answer, one column per judge."""
HUMAN_OK = {"ok", "1", "true", "yes", "correct"}
HUMAN_WRONG = {"wrong", "0", "false", "no", "incorrect"}


def unanimity(matrix: LabelMatrix) -> float:
    """The share of answers on which every judge gave the same label."""
    if not matrix:
        return float("nan")
    return sum(len(set(row)) == 1 for row in matrix) / len(matrix)


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float:
    """Cohen's kappa of two raters; NaN where it is undefined (one label throughout)."""
    if len(first) != len(second) or not first:
        raise ValueError("Cohen's kappa needs two equally long, non-empty label sequences")
    from statsmodels.stats.inter_rater import cohens_kappa, to_table

    table, _ = to_table(np.array([first, second], dtype=object).T)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(cohens_kappa(table, return_results=False))


def pairwise_cohen(matrix: LabelMatrix, judges: Sequence[str]) -> dict[tuple[str, str], float]:
    columns = list(zip(*matrix, strict=True))
    return {
        (judges[i], judges[j]): cohen_kappa(columns[i], columns[j])
        for i, j in itertools.combinations(range(len(judges)), 2)
    }


def fleiss_kappa(matrix: LabelMatrix) -> float:
    """Fleiss' kappa for a fixed number of raters per item; NaN where it is undefined."""
    if not matrix:
        raise ValueError("Fleiss' kappa needs at least one rated item")
    raters = len(matrix[0])
    if raters < 2 or any(len(row) != raters for row in matrix):
        raise ValueError("Fleiss' kappa needs the same number (at least 2) of ratings for every item")
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

    counts, _ = aggregate_raters(np.array(matrix, dtype=object))
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(statsmodels_fleiss(counts))


def kappa_text(kappa: float) -> str:
    """A kappa for reading: three decimals, or "undefined" (every rating the same label)."""
    return "undefined" if math.isnan(kappa) else f"{kappa:.3f}"


def read_human_labels(path: Path) -> dict[tuple[str, str], bool]:
    """Human verdicts from a CSV with columns problem, answer, verdict (ok/wrong, 1/0, ...)."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError) as error:
        raise JudgeError(f"{path}: cannot read the human labels: {error}") from None
    labels: dict[tuple[str, str], bool] = {}
    for number, row in enumerate(rows, start=2):
        verdict = (row.get("verdict") or row.get("human verdict") or "").strip().lower()
        if verdict not in HUMAN_OK | HUMAN_WRONG or not row.get("problem"):
            raise JudgeError(
                f"{path}, line {number}: expected problem, answer and a verdict such as ok/wrong"
            )
        labels[(row["problem"].strip(), (row.get("answer") or "").strip())] = verdict in HUMAN_OK
    return labels


def agreement_with_humans(
    verdicts: Mapping[tuple[str, str], Sequence[Verdict]],
    human: Mapping[tuple[str, str], bool],
    policies: Sequence[str],
) -> dict[str, float]:
    """For each policy, the share of human-labelled answers on which it agrees with the human."""
    shared = [key for key in verdicts if key in human]
    if not shared:
        raise JudgeError("no judged answer has a human label (match on problem and answer text)")
    return {
        policy: sum(decide(verdicts[key], policy).ok == human[key] for key in shared) / len(shared)
        for policy in policies
    }
