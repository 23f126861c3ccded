"""The papers' headline numbers: each carries its source and names a strategy that exists, and
`compare --published` marks a number inside or outside the measured cell's interval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datasets_io.records import Answer
from graphs.registry import get_strategy
from results.grid_report import GridCell, grid_report
from results.published import beside, published_numbers
from results.store import STORE_FILE, ResultsStore


def test_every_published_number_carries_its_source_and_runs_here() -> None:
    numbers = published_numbers()
    assert {number.paper for number in numbers} == {"000", "002", "003", "004"}
    for number in numbers:
        assert number.table and number.row and number.column and number.protocol and number.divides
        assert 0 <= number.rate <= 1
        get_strategy(number.strategy).parse_options(number.options)  # a strategy, with options it takes
    table_1 = {(n.row, n.column): n.value for n in numbers if (n.paper, n.table) == ("002", "Table 1")}
    assert len(table_1) == 8 * 12 and table_1[("GPT-4 Turbo", "OpenWorld De")] == 57


def run_of(store: ResultsStore, strategy: str, solved: int, problems: int = 100) -> str:
    config: dict[str, Any] = {"strategy": strategy, "dataset": "bongard-classic", "agents": {"reasoner": "m"}}
    run_id = store.create_run(config | {"attempts": 1}, "test")
    for number in range(1, problems + 1):
        answer = Answer(
            strategy=strategy,
            problem=f"bongard-classic/{number}",
            text="",
            expected={"sides": {}},
            correct=number <= solved,
        )
        store.save_item(run_id, f"bongard-classic/{number}", 0, answer, None)
    store.release_run(run_id, finished=True)
    return run_id


def test_compare_published_marks_inside_and_outside(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    cells = [
        GridCell(
            "a", "bongard-classic", "direct", "GPT-4o", run_of(store, "direct", 20), {}
        ),  # 17/100 published
        GridCell("b", "bongard-classic", "direct", "GPT-4 Turbo", run_of(store, "direct", 40), {}),  # 6/100
        GridCell(
            "c", "bongard-classic", "direct", "my-model", run_of(store, "direct", 40), {}
        ),  # no paper row
    ]
    found = beside(grid_report(store, cells).rows)
    assert [(pair.published.row, pair.published.value, pair.inside) for pair in found] == [
        ("GPT-4o", 17, True),  # 0.17 in [0.133, 0.289]
        ("GPT-4 Turbo", 6, False),  # 0.06 below [0.309, 0.498]
    ]
    assert found[0].as_json()["source"] == "paper 002, Table 1, GPT-4o / Synthetic Di"
