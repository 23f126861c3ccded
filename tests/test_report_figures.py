"""The comparison's figures and the runs it is allowed to count, from real runs of the offline
perception agent over the classic problems."""

from __future__ import annotations

import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from graphs.runs.runner import RunConfig
from results.report import write_report
from results.report_figures import FIGURES, INTERVAL_GID
from results.run_compatibility import IncompatibleRuns, select_runs
from results.store import ResultsStore
from results.task_types import TaskTypes, write_types
from tests.stored_runs import run_into_store

HELD_OUT = {"holdout_test": "true"}
SVG = "{http://www.w3.org/2000/svg}"


def perception_run(home: Path, shared: Path, strategy: str, problems: list[str], **settings: object) -> str:
    config = RunConfig(
        strategy=strategy,
        dataset="bongard-classic",
        data_dir=str(shared),
        agents={"reasoner": "perception", "describer": "perception"},
        problems=problems,
        **settings,
    )
    return run_into_store(home, config).run_id


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> tuple[ResultsStore, list[str]]:
    """A classification run over problems 1, 2, 10, 11 and 100, and an unjudged free-form run
    over 2 and 3."""
    home = tmp_path_factory.mktemp("figures")
    sides = perception_run(
        home, shared_data, "images-to-sides", ["100", "11", "10", "2", "1"], dataset_options=HELD_OUT
    )
    free_form = perception_run(home, shared_data, "descriptive", ["2", "3"])
    return ResultsStore(home / "store.sqlite"), [sides, free_form]


@pytest.fixture(scope="module")
def svg_report(
    two_runs: tuple[ResultsStore, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, pd.DataFrame]:
    """The comparison of the two runs with its figures as SVG, and its table."""
    out = tmp_path_factory.mktemp("svg")
    return out, write_report(*two_runs, out, fmt="svg")


def svg_texts(path: Path) -> list[str]:
    """The text of an SVG figure in drawing order (text stays text: `svg.fonttype` none)."""
    return ["".join(node.itertext()).strip() for node in ET.parse(path).getroot().iter(f"{SVG}text")]


def test_every_figure_is_written_in_each_format_without_a_library_warning(
    two_runs: tuple[ResultsStore, list[str]], tmp_path: Path
) -> None:
    store, run_ids = two_runs
    for fmt in ("png", "svg", "pdf"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # any warning a library would print fails the test
            warnings.simplefilter("ignore", ResourceWarning)  # earlier tests' files, collected here
            write_report(store, run_ids, tmp_path / fmt, fmt=fmt)
        assert sorted(p.name for p in (tmp_path / fmt).glob(f"*.{fmt}")) == sorted(
            f"{n}.{fmt}" for n in FIGURES
        )
    assert (tmp_path / "pdf" / "accuracy.pdf").read_bytes().startswith(b"%PDF")


def test_coverage_runs_in_numeric_order_and_tells_unattempted_and_unjudged_from_unsolved(
    svg_report: tuple[Path, pd.DataFrame],
) -> None:
    texts = svg_texts(svg_report[0] / "coverage.svg")
    assert [t for t in texts if t.isdigit()] == ["1", "2", "3", "10", "11", "100"]
    assert {"solved", "not solved", "unjudged", "not attempted", "M1 = perception"} <= set(texts)
    assert "Which problems each strategy and model solved" in texts


def test_accuracy_bars_carry_interval_value_and_n_and_an_unjudged_run_no_bar(
    svg_report: tuple[Path, pd.DataFrame],
) -> None:
    out, table = svg_report
    root = ET.parse(out / "accuracy.svg").getroot()
    intervals = [g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith(INTERVAL_GID)]
    assert intervals, "no interval bars drawn"
    text = " ".join(svg_texts(out / "accuracy.svg"))
    sides = table[table["strategy"] == "images-to-sides"].iloc[0]
    assert f"{sides['accuracy']:.2f}" in text and "n=5" in text
    assert "M1 unjudged" in text  # the descriptive run: no bar, the word
    assert "M1  perception" in text  # the legend gives the alias's full spec


def test_cost_is_plotted_in_dollars_and_tokens_apart(svg_report: tuple[Path, pd.DataFrame]) -> None:
    cost = svg_texts(svg_report[0] / "cost_per_solved.svg")
    assert "US dollars per solved problem" in cost
    assert any(re.fullmatch(r"\$[\d,]+\.\d+", t) for t in cost)  # a dollar axis, sub-cent digits kept
    tokens = svg_texts(svg_report[0] / "tokens_per_solved.svg")
    assert "model tokens per solved problem" in tokens
    assert any("no tokens" in t for t in tokens)  # the offline agent reports none: not a zero bar


def test_compare_leaves_out_an_interrupted_run_and_says_how_to_finish_it(
    two_runs: tuple[ResultsStore, list[str]],
) -> None:
    store, run_ids = two_runs
    interrupted = store.create_run(store.run_config(run_ids[0]) | {"problems": ["4", "5"]}, "test")
    store.hold_run(interrupted, planned=2)
    store.release_run(interrupted, finished=False)  # killed before any item was stored
    selection = select_runs(store, [*run_ids, interrupted])
    assert selection.run_ids == run_ids
    assert selection.left_out == [
        f"{interrupted} (interrupted, 0/2 items done; finish it with "
        f"`bongard run --resume {interrupted} --home {store.path.parent}`)"
    ]
    assert select_runs(store, [*run_ids, interrupted], include_incomplete=True).run_ids == [
        *run_ids,
        interrupted,
    ]
    with pytest.raises(IncompatibleRuns, match="no complete run to compare"):
        select_runs(store, [interrupted])
    store.delete_run(interrupted)


def test_compare_refuses_a_row_mixing_protocols_or_counting_a_problem_twice(
    tmp_path: Path, shared_data: Path
) -> None:
    def sides(problems: list[str], variant: str = "plain") -> str:
        return perception_run(
            tmp_path, shared_data, "images-to-sides", problems, dataset_options=HELD_OUT, variant=variant
        )

    first, second, grey, overlapping = sides(["2", "3"]), sides(["1"]), sides(["7"], "grey"), sides(["3"])
    store = ResultsStore(tmp_path / "store.sqlite")
    assert select_runs(store, [first, second]).run_ids == [first, second]  # 1, 2 and 3: one row
    with pytest.raises(IncompatibleRuns, match=r"differ in variant 'plain' vs 'grey'.*--mixed-rows"):
        select_runs(store, [first, grey])
    assert select_runs(store, [first, grey], mixed_rows=True).run_ids == [first, grey]
    with pytest.raises(IncompatibleRuns, match="both attempted bongard-classic/3"):
        select_runs(store, [first, overlapping], mixed_rows=True)


def test_the_venn_of_types_keeps_its_whole_title_and_draws_empty_sets_without_a_warning(
    tmp_path: Path,
) -> None:
    title = "openai-compatible:a-model-with-a-long-name@http://127.0.0.1:8000/v1 on bongard-classic"
    types = TaskTypes(frozenset({"d/1", "d/2"}), frozenset(), frozenset({"d/2", "d/3"}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_types(types, title, tmp_path, fmt="svg")
    texts = svg_texts(tmp_path / "types.svg")
    assert "".join(title.split()) in "".join("".join(texts).split())  # wrapped, not cut
    assert "Type III" in texts


def local_server_problems(runs: int, problems: int) -> pd.DataFrame:
    """A problems frame as `problems_frame` gives it: `runs` runs of local servers with long specs."""
    from results.report_rows import UNSOLVED_COLUMNS

    rows = [
        {
            "run_id": f"r{m}", "strategy": "images-to-sides", "dataset": "bongard-logo:/data/fresh",
            "model": f"openai-compatible:qwen2.5-vl-72b-instruct-awq-{m}@http://127.0.0.1:80{m}0/v1",
            "problem": f"bongard-logo/ff_nact4_{i:04d}", "scored": 1, "failed": False, "unanswered": False,
            "solved": int((i * (m + 3)) % 7 < 3), "attempts": 1, "solved_attempts": 0,
            **dict.fromkeys(UNSOLVED_COLUMNS.values(), 0),
            "tokens": 120, "cost_usd": 0.001, "judge_cost_usd": 0.0, "images": 2, "images_right": 1,
        }
        for m in range(runs)
        for i in range(problems)
    ]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("problems", [160, 5000])
def test_figures_of_long_local_server_specs_and_many_problems_are_bounded_and_warn_nothing(
    problems: int, tmp_path: Path
) -> None:
    """Four runs with specs of local servers: matplotlib's 'constrained_layout not applied' reached
    the terminal, and the coverage figure took one column per problem (20 inches at 160)."""
    from PIL import Image

    from results.report import comparison_table
    from results.report_figures import write_figures

    frame = local_server_problems(4, problems)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_figures(comparison_table(frame), frame, tmp_path)
    with Image.open(tmp_path / "coverage.png") as coverage:
        assert coverage.width < 3000  # at most COVERAGE_COLUMNS columns, however many problems
