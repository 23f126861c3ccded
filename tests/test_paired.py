"""Paired tests between an experiment's cells: exact McNemar and Holm equal statsmodels', and the
grid's counts are the stored decisions, on runs built problem by problem."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from datasets_io.records import Answer
from results.grid_report import GridCell, formatted, grid_report
from results.paired import holm, mcnemar_exact
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard

PROBLEMS = [str(n) for n in range(1, 41)]
SOLVED = {
    ("direct", "m1"): set(PROBLEMS[:30]),
    ("descriptive", "m1"): set(PROBLEMS[:12]),  # 18 discordant, all for direct: a real difference
    ("direct", "m2"): set(PROBLEMS[5:25]),
    ("descriptive", "m2"): set(PROBLEMS[6:24]) | {"40"},
}
"""Which problems each cell solves."""


@pytest.mark.parametrize(("first_only", "second_only"), [(0, 0), (1, 0), (3, 7), (18, 0), (25, 24), (0, 60)])
def test_mcnemar_exact_equals_statsmodels(first_only: int, second_only: int) -> None:
    expected = mcnemar([[5, first_only], [second_only, 9]], exact=True).pvalue
    assert mcnemar_exact(first_only, second_only) == pytest.approx(expected, abs=1e-12)


def test_holm_equals_statsmodels_multipletests() -> None:
    chance = random.Random(3)
    for size in (1, 2, 5, 17):
        p_values = [chance.random() ** 3 for _ in range(size)]
        assert holm(p_values) == pytest.approx(list(multipletests(p_values, method="holm")[1]), abs=1e-12)


def stored_grid(store: ResultsStore) -> list[GridCell]:
    cells = []
    for (strategy, model), solved in SOLVED.items():
        config: dict[str, Any] = {
            "strategy": strategy,
            "dataset": "d",
            "agents": {"reasoner": model},
            "attempts": 1,
        }
        run_id = store.create_run(config, "test")
        for problem in PROBLEMS:
            answer = Answer(
                strategy=strategy,
                problem=f"d/{problem}",
                text="",
                expected={"sides": {}},
                correct=problem in solved,
            )
            store.save_item(run_id, f"d/{problem}", 0, answer, None)
        store.release_run(run_id, finished=True)
        key = f"{strategy} | {model} | d"
        cells.append(GridCell(key, "d", strategy, model, run_id, {"key": key, "cell_calls": 40}))
    return cells


def test_the_grids_counts_are_the_stored_decisions_and_its_tests_statsmodels(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    report = grid_report(store, stored_grid(store))
    assert [(row["strategy"], row["model"], row["solved"], row["n"]) for row in report.rows] == [
        (strategy, model, len(solved), 40) for (strategy, model), solved in SOLVED.items()
    ]
    assert len(report.tests) == 4  # two strategies per model, two models per strategy
    raw = []
    for test in report.tests:
        first = SOLVED[tuple(test.first.split(" | ")[:2])]  # type: ignore[index]
        second = SOLVED[tuple(test.second.split(" | ")[:2])]  # type: ignore[index]
        assert (test.first_only, test.second_only) == (len(first - second), len(second - first))
        table = [[len(first & second), len(first - second)], [len(second - first), 40 - len(first | second)]]
        assert test.p == pytest.approx(mcnemar(table, exact=True).pvalue)
        raw.append(test.p)
    assert [t.p_holm for t in report.tests] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    direct_vs_descriptive = next(t for t in report.tests if t.family == "model m1 on d")
    assert direct_vs_descriptive.significant and direct_vs_descriptive.difference == pytest.approx(18 / 40)
    assert not next(t for t in report.tests if t.family == "model m2 on d").significant


def test_a_paper_table_comes_out_in_each_format(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    report = grid_report(store, stored_grid(store))
    assert formatted(report, "csv").splitlines()[1].startswith("d,direct,m1,40,30,0.75,")
    assert "| d | descriptive | m1 | 40 | 12 | 0.3 |" in formatted(report, "markdown")
    latex = formatted(report, "latex")
    assert latex.startswith(r"\begin{tabular}{lllrr") and r"cost\_usd" in latex and latex.count(r"\\") == 5
    assert run_bongard("experiment", "compare", "nothing-stored", "--home", tmp_path).returncode == 2


def test_the_figures_are_a_heat_map_per_dataset_and_the_differences(tmp_path: Path) -> None:
    from PIL import Image

    from results.grid_figures import differences, heat_maps

    store = ResultsStore(tmp_path / STORE_FILE)
    report = grid_report(store, stored_grid(store))
    [heat] = heat_maps(report, tmp_path)
    forest = differences(report, tmp_path)
    assert heat.name == "grid-d.png" and forest is not None
    for path in (heat, forest):
        with Image.open(path) as image:
            assert image.width > 400 and image.height > 150
