"""Bongard in Wonderland's Task 2 criteria, read from concept-probe runs (003 Sec. 4 Q3, Table 9).

Table 9 counts a problem when every one of its 12 panels is classified right, in two ways over
the 3 runs: in every run, and in at least 2 of the 3. These are per panel across runs, not "all
12 right in most runs", which can count a different set of problems.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import pandas as pd

from results.intervals import wilson
from results.report import runs_frame
from results.store import ResultsStore
from results.task2 import TABLE_9, TABLE_9_CRITERIA, ProbeCriterion

PanelHits = dict[str, dict[str, list[bool]]]


def panel_hits(store: ResultsStore, run_id: str) -> PanelHits:
    """problem -> panel ref -> right or not, one entry per done attempt."""
    hits: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for problem, _, answer in store.answer_records(run_id):
        truths: dict[str, str] = answer.expected.get("sides") or {}
        given: dict[str, str | None] = dict(answer.sides)
        for ref, side in truths.items():
            hits[problem][ref].append(given.get(ref) == side)
    return hits


def meets(panels: dict[str, list[bool]], criterion: ProbeCriterion) -> bool:
    """Whether a problem's panels (ref -> right in each attempt) meet a Task 2 criterion; at least
    2 of 3 is generalised to ceil(2/3 of the attempts): 1 of 1, 2 of 2 or 3, ..."""
    if criterion == "every-attempt":
        return all(all(runs) for runs in panels.values())
    if criterion == "two-thirds":
        return all(sum(runs) >= math.ceil(2 * len(runs) / 3) for runs in panels.values())
    attempts = zip(*panels.values(), strict=True)  # the attempts, each every panel's hit
    all_right = [all(attempt) for attempt in attempts]
    return sum(all_right) > len(all_right) / 2


def problems_meeting(hits: PanelHits, criterion: ProbeCriterion) -> set[str]:
    return {problem for problem, panels in hits.items() if meets(panels, criterion)}


def probe_criteria(store: ResultsStore, run_ids: list[str]) -> pd.DataFrame:
    """Per run: problems, and problems counted by each Table 9 criterion, each also as a rate of the
    problems with its 95% Wilson interval (`CRITERION_rate`, `_rate_low`, `_rate_high`)."""
    rows = []
    for run_id in run_ids:
        hits = panel_hits(store, run_id)
        row: dict[str, Any] = {"run_id": run_id, "problems": len(hits)}
        for column, criterion in zip(TABLE_9, TABLE_9_CRITERIA, strict=True):
            count = len(problems_meeting(hits, criterion))
            low, high = wilson(count, len(hits))
            rate = round(count / len(hits), 3) if hits else None
            row |= {
                column: count,
                f"{column}_rate": rate,
                f"{column}_rate_low": low,
                f"{column}_rate_high": high,
            }
        rows.append(row)
    table = pd.DataFrame(rows)
    return runs_frame(store, run_ids).merge(table, on="run_id")
