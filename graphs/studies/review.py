"""An expert's verdicts on a study's free-form answers, `bongard review`-style: a CSV template of
the answers still to label (with the true concept beside each), and the filled-in CSV stored.

Paper 003 read its judge against two experts on 696 answers (91 % agreement); `compare_study`
reads the counted judging against each expert whose verdicts are stored.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from datasets_io.problem import own_id
from graphs.registry import get_strategy
from graphs.studies.design import StudyDesignError
from graphs.studies.participants import Study
from judges.agreement import HUMAN_OK, HUMAN_WRONG
from results.store import ResultsStore
from results.studies import ItemKey

TEMPLATE_COLUMNS = (
    "run",
    "problem",
    "attempt",
    "solver",
    "left concept",
    "right concept",
    "answer",
    "verdict",
)


@dataclass(frozen=True)
class ToLabel:
    key: ItemKey
    solver: str
    left: str
    right: str
    answer: str


def answers_to_label(
    store: ResultsStore, study: Study, solvers: dict[str, str], expert: str
) -> list[ToLabel]:
    """The free-form answers of `solvers` (run id -> label) that `expert` has not labelled yet."""
    if not get_strategy(study.design.task).judged:
        raise StudyDesignError(
            f"study {study.name} asks {study.design.task}, scored exactly: "
            "there are no free-form answers to label"
        )
    done = study.records.labels(study.name).get(expert, {})
    dataset = study.questions.dataset
    found = []
    for run_id, label in solvers.items():
        for problem, attempt, answer in store.answer_records(run_id):
            if (run_id, problem, attempt) in done:
                continue
            concept = dataset.problem(own_id(problem, dataset.name)).concept
            left, right = (concept.left, concept.stated_right) if concept is not None else ("", "")
            found.append(ToLabel((run_id, problem, attempt), label, left, right, answer.text))
    return found


def write_template(rows: list[ToLabel], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TEMPLATE_COLUMNS)
        writer.writerows([*r.key, r.solver, r.left, r.right, r.answer, ""] for r in rows)


def read_labels(path: Path, known: set[ItemKey]) -> dict[ItemKey, bool]:
    """The verdicts of a filled-in template (rows left blank are skipped); a row naming an answer
    outside `known` or a verdict other than ok/wrong is refused with its line."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError) as error:
        raise StudyDesignError(f"{path}: cannot read the verdicts: {error}") from None
    found: dict[ItemKey, bool] = {}
    for number, row in enumerate(rows, start=2):
        verdict = (row.get("verdict") or "").strip().lower()
        if not verdict:
            continue
        try:
            key = (str(row["run"]).strip(), str(row["problem"]).strip(), int(str(row["attempt"])))
        except (KeyError, TypeError, ValueError):
            raise StudyDesignError(
                f"{path}, line {number}: expected run, problem, attempt and verdict"
            ) from None
        if verdict not in HUMAN_OK | HUMAN_WRONG:
            raise StudyDesignError(f"{path}, line {number}: verdict {verdict!r} is neither ok nor wrong")
        if key not in known:
            raise StudyDesignError(
                f"{path}, line {number}: no answer {key[1]} (attempt {key[2]}) of run {key[0]} in the study"
            )
        found[key] = verdict in HUMAN_OK
    return found
