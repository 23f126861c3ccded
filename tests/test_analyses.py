"""The analyses over stored runs, on constructed results with known answers.

Solved-in-K-of-N, query accuracy by polarity and category, the rule-description
similarity (with the real offline MiniLM) and the Type I-IV set arithmetic,
each through the library and through `bongard analyze`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image

from graphs.answer import Answer
from graphs.registry import StrategyError
from graphs.reports.analyses import group_accuracy, task_types_of_runs, wonderland_category_accuracy
from judges.rule_similarity import rule_description_similarity
from judges.verdict import Verdict
from results.counting import Aggregate, Counting
from results.intervals import wilson
from results.probe_report import probe_criteria
from results.query_report import category_accuracy, query_accuracy, query_frame
from results.report import problems_frame, solved_problems
from results.store import STORE_FILE, ResultsStore
from results.task2 import CRITERION_WORDS, ProbeCriterion
from results.task_types import TaskTypes, write_types
from tests.cli import run_bongard

DATASET = "bongard-classic"


def config(strategy: str, model: str = "m", dataset: str = DATASET, attempts: int = 1) -> dict[str, Any]:
    return {"strategy": strategy, "dataset": dataset, "agents": {"reasoner": model}, "attempts": attempts}


def free_answer(strategy: str, problem: str) -> Answer:
    return Answer(strategy=strategy, problem=problem, text="Left: a\nRight: b")


PANELS = {f"{side}-{n}": side for side in ("left", "right") for n in range(1, 7)}


def probe_answer(problem: str, wrong: set[str]) -> Answer:
    """A concept-probe attempt with the `wrong` panels put on the other side, the rest right."""
    flipped = {"left": "right", "right": "left"}
    sides = {ref: flipped[side] if ref in wrong else side for ref, side in PANELS.items()}
    return Answer(
        strategy="concept-probe",
        problem=problem,
        text="",
        sides=sides,
        expected={"sides": PANELS},
        correct=not wrong,
    )


def scored_answer(strategy: str, problem: str, correct: bool) -> Answer:
    if strategy == "concept-probe":  # a wrong attempt gets one panel wrong, always the same one
        return probe_answer(problem, set() if correct else {"left-1"})
    return Answer(strategy=strategy, problem=problem, text="", expected={"sides": {}}, correct=correct)


def judged_run(store: ResultsStore, strategy: str, accepted: dict[str, list[bool]], model: str = "m") -> str:
    """A free-form run whose attempt `a` of problem `p` was accepted when `accepted[p][a]`."""
    run_id = store.create_run(config(strategy, model, attempts=max(map(len, accepted.values()))), "test")
    for number, verdicts in accepted.items():
        problem = f"{DATASET}/{number}"
        for attempt, ok in enumerate(verdicts):
            store.save_item(run_id, problem, attempt, free_answer(strategy, problem), None)
            verdict = {"judge": "j", "label": "ok" if ok else "wrong", "raw_text": "", "input_tokens": 0}
            store.save_judging(
                run_id,
                problem,
                attempt,
                "strict|j",
                "vote:1",
                ok,
                [Verdict.model_validate(verdict | {"output_tokens": 0, "cost_usd": 0})],
            )
    store.release_run(run_id, finished=True)
    return run_id


def scored_run(store: ResultsStore, strategy: str, correct: dict[str, list[bool]], model: str = "m") -> str:
    run_id = store.create_run(config(strategy, model, attempts=max(map(len, correct.values()))), "test")
    for number, flags in correct.items():
        problem = f"{DATASET}/{number}"
        for attempt, ok in enumerate(flags):
            store.save_item(run_id, problem, attempt, scored_answer(strategy, problem, ok), None)
    store.release_run(run_id, finished=True)
    return run_id


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    return ResultsStore(tmp_path / "home" / STORE_FILE)


def test_a_problem_is_solved_by_most_attempts_or_by_at_least_k(store: ResultsStore) -> None:
    run_id = judged_run(
        store,
        "open-ended",
        {"1": [True, True, False], "2": [True, False, False], "3": [True] * 3, "4": [False] * 3},
    )
    frame = problems_frame(store, [run_id]).set_index("problem")
    assert list(frame["solved_attempts"]) == [2, 1, 3, 0]
    assert solved_problems(store, run_id) == {f"{DATASET}/1", f"{DATASET}/3"}  # 2 of 3 by default
    assert solved_problems(store, run_id, Counting(Aggregate("any"))) == {f"{DATASET}/{n}" for n in "123"}
    assert solved_problems(store, run_id, Counting(Aggregate("at-least", 3))) == {f"{DATASET}/3"}


def test_the_mean_over_attempts_is_wonderlands_table_1_count(store: ResultsStore, tmp_path: Path) -> None:
    """Table 1: per run (attempt) the problems solved, averaged over the 3 runs and rounded. By hand:
    attempt 0 solves 1, 2 and 5, attempt 1 solves 3, attempt 2 solves 4 and 5: (3 + 1 + 2) / 3 = 2;
    by majority only 5 (2 of 3) counts, by any all five do."""
    judged_run(
        store,
        "open-ended",
        {
            "1": [True, False, False],
            "2": [True, False, False],
            "3": [False, True, False],
            "4": [False, False, True],
            "5": [True, False, True],
            "6": [False] * 3,
        },
    )
    home = ("--home", store.path.parent)

    def counted(aggregate: str) -> tuple[int, float]:
        out = tmp_path / aggregate.replace(":", "-")
        result = run_bongard("compare", "--aggregate", aggregate, "--out", out, *home)
        assert result.returncode == 0, result.stderr
        [row] = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
        return row["solved"], row["accuracy"]

    assert counted("mean") == (2, 0.333)
    assert counted("majority") == (1, 0.167)
    assert counted("any") == (5, 0.833)
    assert counted("at-least:3") == (0, 0.0)
    refused = run_bongard("compare", "--aggregate", "at-least:4", *home)
    assert (
        refused.returncode == 2
        and "made 3 attempt(s) per problem: at-least:4 can never hold" in refused.stderr
    )
    misspelt = run_bongard("compare", "--aggregate", "average", *home)
    assert misspelt.returncode == 2 and "expected majority, mean, any or at-least:K" in misspelt.stderr


def test_the_types_are_the_intersections_of_the_three_solved_sets() -> None:
    t1, t2, t3 = frozenset("abcdh"), frozenset("abeg"), frozenset("acefh")
    types = TaskTypes(t1, t2, t3)
    assert types.types() == {
        "I": frozenset("b"), "II": frozenset("e"), "III": frozenset("ch"), "IV": frozenset("a"),
    }  # fmt: skip
    counts = types.counts()
    assert (counts["T1&T3/T1"], counts["Type IV/T1"]) == (3 / 5, 1 / 5)
    assert TaskTypes(frozenset(), t2, t3).counts()["Type IV/T1"] is None


def three_runs(store: ResultsStore) -> tuple[str, str, str]:
    """T1 = {1, 2, 3, 5}, T2 = {1, 2, 4}, T3 = {2, 3, 4, 6}."""
    open_ended = judged_run(
        store,
        "open-ended",
        {
            "1": [True] * 3,
            "2": [True, True, False],
            "3": [False, True, True],
            "4": [True, False, False],
            "5": [True] * 3,
            "6": [False] * 3,
        },
    )
    probe = scored_run(
        store,
        "concept-probe",
        {
            "1": [True, True, True],
            "2": [True, False, True],
            "3": [False] * 3,
            "4": [True, True, False],
            "5": [False, False, True],
            "6": [False] * 3,
        },
    )
    hypotheses = judged_run(
        store, "hypotheses", {"1": [False], "2": [True], "3": [True], "4": [True], "5": [False], "6": [True]}
    )
    return open_ended, probe, hypotheses


def test_task_2_counts_by_the_criterion_named_and_the_papers_gives_its_types(
    store: ResultsStore, tmp_path: Path
) -> None:
    """Hand-computed: T1 = {1,2,3,4,5,6,10}, T3 = {1,2,3,7,8,10}. Probe attempts: clean (every
    panel right: 1, 4, 9), spread (attempt a gets panel a wrong, so each panel is right in 2 of 3,
    but no attempt has all 12: 2, 3, 5, 7, 8), bad (one panel wrong in 2 attempts: 6, 10).
    Per panel in 2 of 3 (the paper's): T2 = {1,2,3,4,5,7,8,9}, Types I-IV 2/2/1/3.
    Per attempt (all 12 right in most attempts): T2 = {1,4,9}, Types 1/0/3/1."""
    t1, t3 = {"1", "2", "3", "4", "5", "6", "10"}, {"1", "2", "3", "7", "8", "10"}
    open_ended = judged_run(store, "open-ended", {p: [p in t1] * 3 for p in map(str, range(1, 11))})
    hypotheses = judged_run(store, "hypotheses", {p: [p in t3] for p in map(str, range(1, 11))})
    refs = list(PANELS)
    attempts: dict[str, list[set[str]]] = {
        "clean": [set(), set(), set()],
        "spread": [{refs[0]}, {refs[1]}, {refs[2]}],
        "bad": [{refs[0]}, {refs[0]}, set()],
    }
    kinds = {"1": "clean", "4": "clean", "9": "clean", "6": "bad", "10": "bad"}
    probe = store.create_run(config("concept-probe", "m", attempts=3), "test")
    for number in map(str, range(1, 11)):
        for attempt, wrong in enumerate(attempts[kinds.get(number, "spread")]):
            problem = f"{DATASET}/{number}"
            store.save_item(probe, problem, attempt, probe_answer(problem, wrong), None)
    store.release_run(probe, finished=True)

    def types(criterion: ProbeCriterion) -> tuple[list[str], tuple[int, ...]]:
        analysis = task_types_of_runs(store, (open_ended, probe, hypotheses), probe_criterion=criterion)
        t2 = sorted((p.split("/")[1] for p in analysis.types.t2), key=int)
        return t2, tuple(len(members) for members in analysis.types.types().values())

    assert types("two-thirds") == (["1", "2", "3", "4", "5", "7", "8", "9"], (2, 2, 1, 3))
    assert types("per-attempt") == (["1", "4", "9"], (1, 0, 3, 1))
    assert types("every-attempt") == (["1", "4", "9"], (1, 0, 3, 1))
    [row] = probe_criteria(store, [probe]).to_dict("records")
    assert (row["every_panel_in_every_attempt"], row["every_panel_in_two_thirds"]) == (3, 8)
    out = tmp_path / "types"
    ran = run_bongard(
        "analyze",
        "types",
        "--open-ended",
        open_ended,
        "--probe",
        probe,
        "--hypotheses",
        hypotheses,
        "--out",
        out,
        "--home",
        store.path.parent,
    )
    assert ran.returncode == 0 and "at least 2 of 3 attempts" in ran.stdout, ran.stderr
    assert json.loads((out / "types.json").read_text())["counts"]["Type IV"] == 3
    shown = " ".join(run_bongard("runs", "show", probe, "--home", store.path.parent).stdout.split())
    assert "every panel right in every attempt: 3 of 10" in shown
    assert "every panel right in at least 2 of 3 attempts: 8 of 10" in shown
    compared = run_bongard("compare", probe, "--out", tmp_path / "c", "--home", store.path.parent)
    assert compared.returncode == 0, compared.stderr
    assert "every_panel_in_two_thirds" in compared.stdout
    assert (tmp_path / "c" / "probe_criteria.csv").read_text().splitlines()[1].endswith(",10,3,8")


def test_types_from_three_stored_runs_with_solved_in_two_of_three(
    store: ResultsStore, tmp_path: Path
) -> None:
    analysis = task_types_of_runs(store, three_runs(store))
    members = {name: [p.split("/")[1] for p in ps] for name, ps in analysis.types.members().items()}
    assert members == {
        "T1": ["1", "2", "3", "5"], "T2": ["1", "2", "4"], "T3": ["2", "3", "4", "6"],
        "Type I": ["1"], "Type II": ["4"], "Type III": ["3"], "Type IV": ["2"],
    }  # fmt: skip
    assert analysis.warnings == []
    assert analysis.title == f"m on {DATASET}; Task 2: {CRITERION_WORDS['two-thirds']}"
    write_types(analysis.types, analysis.title, tmp_path / "types")
    report = json.loads((tmp_path / "types" / "types.json").read_text())
    assert report["counts"]["Type III"] == 1 and report["members"]["Type IV"] == [f"{DATASET}/2"]
    with Image.open(tmp_path / "types" / "types.png") as venn:
        assert venn.size[0] > 300 and venn.getextrema() != ((255, 255), (255, 255), (255, 255))
    assert "| 4 | 3 | 4 | 0.5 | 1 | 1 | 1 | 1 | 0.25 |" in (tmp_path / "types" / "types.md").read_text()


def test_types_need_the_three_right_runs_of_one_dataset_and_warn_when_unjudged(store: ResultsStore) -> None:
    open_ended, probe, hypotheses = three_runs(store)
    with pytest.raises(StrategyError, match="is a concept-probe run; expected open-ended"):
        task_types_of_runs(store, (probe, probe, hypotheses))
    other = store.create_run(config("hypotheses", dataset="bongard-rwr"), "test")
    with pytest.raises(StrategyError, match="one dataset"):
        task_types_of_runs(store, (open_ended, probe, other))
    unjudged = store.create_run(config("hypotheses", model="other"), "test")
    store.save_item(unjudged, f"{DATASET}/1", 0, free_answer("hypotheses", f"{DATASET}/1"), None)
    analysis = task_types_of_runs(store, (open_ended, probe, unjudged))
    assert analysis.types.t3 == frozenset()
    assert any(f"run {unjudged} (hypotheses) is not judged yet" in w for w in analysis.warnings)
    assert any("different models (m, other)" in w for w in analysis.warnings)


def query_answer(problem: str, queries: dict[str, tuple[str, str, str, str]], category: str | None) -> Answer:
    """queries: ref -> (true side, given side, rule, description)."""
    return Answer(
        strategy="direct-rule-learning",
        problem=problem,
        text="",
        sides={ref: given for ref, (_, given, _, _) in queries.items()},
        expected={"sides": {ref: truth for ref, (truth, _, _, _) in queries.items()}},
        correct=all(truth == given for truth, given, _, _ in queries.values()),
        details={
            "category": category,
            "queries": {
                ref: {"conclusion": "", "rule": rule, "query": d} for ref, (_, _, rule, d) in queries.items()
            },
        },
    )


def query_run(store: ResultsStore) -> str:
    run_id = store.create_run(config("direct-rule-learning"), "test")
    answers = {
        "1": ({"left-test-6": ("left", "left", "a red circle", "a big red circle on white"),
               "right-test-6": ("right", "left", "a red circle", "a blue square in the corner")}, "Shape"),
        "2": ({"left-test-6": ("left", "left", "people riding bicycles", "a man riding a bicycle downhill"),
               "right-test-6": ("right", "right", "people riding bicycles", "a bowl of fruit")}, "Action"),
        "3": ({"left-test-6": ("left", "right", "snow on mountains", "snowy mountain peaks at dawn"),
               "right-test-6": ("right", "right", "snow on mountains", "a tram in a city street")}, "Shape"),
    }  # fmt: skip
    for number, (queries, category) in answers.items():
        problem = f"{DATASET}/{number}"
        store.save_item(run_id, problem, 0, query_answer(problem, queries, category), None)
    return run_id


def test_query_accuracy_overall_by_polarity_and_by_category(store: ResultsStore) -> None:
    run_id = query_run(store)
    frame = query_frame(store, [run_id])
    assert len(frame) == 6 and set(frame["polarity"]) == {"positive", "negative"}
    [row] = query_accuracy(frame).to_dict("records")
    assert (row["queries"], row["accuracy"]) == (6, round(4 / 6, 4))
    assert (row["positive_queries"], row["positive_accuracy"]) == (3, round(2 / 3, 4))
    assert (row["negative_queries"], row["negative_accuracy"]) == (3, round(2 / 3, 4))
    categories = category_accuracy(frame).set_index("category")
    assert categories.loc["Action", "accuracy"] == 1.0 and categories.loc["Shape", "accuracy"] == 0.5
    assert categories.loc["Shape", "queries"] == 4


def test_descriptions_of_positives_are_closer_to_the_rule_than_of_negatives(store: ResultsStore) -> None:
    run_id = query_run(store)
    table = rule_description_similarity(query_frame(store, [run_id])).set_index("polarity")
    assert table.loc["positive", "pairs"] == 3 and table.loc["negative", "pairs"] == 3
    assert table.loc["positive", "mean"] > table.loc["negative", "mean"] + 0.2
    assert 0 < table.loc["positive", "std"] < 0.5
    right_only = rule_description_similarity(query_frame(store, [run_id]), correct_only=True)
    assert dict(zip(right_only["polarity"], right_only["pairs"], strict=True)) == {
        "positive": 2,
        "negative": 2,
    }


def test_a_deductive_answer_is_compared_with_its_stage_one_rule(store: ResultsStore) -> None:
    run_id = store.create_run(config("deductive-rule-learning"), "test")
    answer = query_answer(f"{DATASET}/1", {"left-test-6": ("left", "left", "query's own", "a circle")}, None)
    answer.details |= {"rule_summary": "round", "rule_extraction": {"rule": "every figure is round"}}
    store.save_item(run_id, f"{DATASET}/1", 0, answer, None)
    [row] = query_frame(store, [run_id]).to_dict("records")
    assert (row["rule"], row["description"], row["category"]) == ("every figure is round", "a circle", None)


def test_accuracy_per_concept_group(store: ResultsStore, shared_data: Path) -> None:
    run_id = store.create_run(
        {**config("image-to-side", dataset="bongard-rwr"), "data_dir": str(shared_data)}, "t"
    )
    for number, ok in (("23", True), ("90", False), ("76", True), ("6", True), ("10", False)):
        problem = f"bongard-rwr/{number}"
        store.save_item(run_id, problem, 0, scored_answer("image-to-side", problem, ok), None)
    store.save_item(run_id, "bongard-rwr/24", 0, None, "provider error: 503")
    table = group_accuracy(store, [run_id]).set_index("group")
    assert table.loc["Count", "problems"] == 2 and table.loc["Count", "accuracy"] == 0.5  # 23 and 90
    assert table.loc["Angle", "solved"] == 1 and table.loc["unknown", "problems"] == 2  # 6 and 10 ungrouped
    assert (table.loc["Count", "accuracy_low"], table.loc["Count", "accuracy_high"]) == wilson(1, 2)
    failed = table.loc[table["failed"] > 0].iloc[0]  # 24, outside n, counted apart
    assert (failed["problems"], failed["n"], failed["failed"]) == (1, 0, 1) and pd.isna(failed["accuracy"])
    result = run_bongard(
        "analyze", "groups", run_id, "--out", store.path.parent / "g", "--home", store.path.parent
    )
    assert result.returncode == 0 and "accuracy_low" in result.stdout, result.stderr
    assert (store.path.parent / "g" / "group_accuracy.png").stat().st_size > 0


def test_accuracy_per_wonderland_category(store: ResultsStore, shared_data: Path) -> None:
    """003 Table 4: BP 2 is a size problem, 8 spatial, 23 number, 1 and 3 concept; 56 same."""
    run_id = store.create_run({**config("open-ended", attempts=3), "data_dir": str(shared_data)}, "t")
    for number, flags in (
        ("1", [True] * 3),
        ("3", [False] * 3),
        ("2", [True, True, False]),
        ("8", [False] * 3),
    ):
        for attempt, ok in enumerate(flags):
            problem = f"{DATASET}/{number}"
            store.save_item(run_id, problem, attempt, scored_answer("open-ended", problem, ok), None)
    store.save_item(run_id, f"{DATASET}/23", 0, scored_answer("open-ended", f"{DATASET}/23", True), None)
    table = wonderland_category_accuracy(store, [run_id]).set_index("category")
    assert (table.loc["concept", "problems"], table.loc["concept", "solved"]) == (2, 1)
    assert table.loc["size", "accuracy"] == 1.0 and table.loc["spatial", "accuracy"] == 0.0
    assert table.loc["number", "solved"] == 1 and "same" not in table.index  # no problem of it here
    mean = wonderland_category_accuracy(store, [run_id], Counting(Aggregate("mean"))).set_index("category")
    assert mean.loc["size", "solved"] == 1  # 2 of 3 attempts: 0.67, rounded
    result = run_bongard("analyze", "categories", run_id, "--home", store.path.parent)
    assert result.returncode == 0 and "spatial" in result.stdout, result.stderr


def test_table_9_counts_each_panel_across_attempts(store: ResultsStore) -> None:
    """003 Table 9: every panel right in every attempt, and every panel right in 2 of 3. Problem 5
    has all 12 right in no single attempt, yet every panel in 2 of 3; problem 4 all 12 in 2 of 3."""
    panels = [f"{side}{n}" for side in "LR" for n in range(6)]
    wrong_in: dict[str, list[set[str]]] = {
        "1": [set(), set(), set()], "2": [set(), set(), {"L0"}], "3": [set(), {"L0"}, {"L0"}],
        "4": [set(), set(), {"R5"}], "5": [{"L0"}, {"L1"}, {"L2"}],
    }  # fmt: skip
    run_id = store.create_run(config("concept-probe", attempts=3), "test")
    for number, attempts in wrong_in.items():
        problem = f"{DATASET}/{number}"
        for attempt, wrong in enumerate(attempts):
            truth = {ref: "left" if ref[0] == "L" else "right" for ref in panels}
            given = {
                ref: ("right" if side == "left" else "left") if ref in wrong else side
                for ref, side in truth.items()
            }
            answer = Answer(
                strategy="concept-probe",
                problem=problem,
                text="",
                sides=given,
                expected={"sides": truth},
                correct=not wrong,
            )
            store.save_item(run_id, problem, attempt, answer, None)
    [row] = probe_criteria(store, [run_id]).to_dict("records")
    assert (row["problems"], row["every_panel_in_every_attempt"], row["every_panel_in_two_thirds"]) == (
        5,
        1,
        4,
    )
    assert solved_problems(store, run_id) == {f"{DATASET}/{n}" for n in "124"}  # all 12 in most attempts
    shown = run_bongard("analyze", "probes", run_id, "--home", store.path.parent)
    assert shown.returncode == 0 and "every_panel_in_two_thirds" in shown.stdout, shown.stderr


def test_bongard_analyze_commands(store: ResultsStore, tmp_path: Path) -> None:
    home = store.path.parent
    runs = three_runs(store)
    queries = query_run(store)
    args: list[str | Path] = ["--home", home]
    result = run_bongard(
        "analyze",
        "types",
        "--open-ended",
        runs[0],
        "--probe",
        runs[1],
        "--hypotheses",
        runs[2],
        "--aggregate",
        "any",
        "--probe-criterion",
        "per-attempt",
        "--out",
        tmp_path / "types",
        *args,
    )
    assert result.returncode == 0, result.stderr
    counts = json.loads((tmp_path / "types" / "types.json").read_text())["counts"]
    assert (counts["T1"], counts["T2"], counts["Type IV"]) == (5, 4, 2)  # at least 1 of the attempts
    task3_once = [
        "--open-ended",
        runs[0],
        "--probe",
        runs[1],
        "--hypotheses",
        runs[2],
        "--aggregate",
        "at-least:2",
    ]
    result = run_bongard("analyze", "types", *task3_once, *args)
    assert result.returncode == 2 and "made 1 attempt(s) per problem" in result.stderr  # Task 3 runs once
    result = run_bongard(
        "analyze", "types", *task3_once, "--aggregate", "hypotheses=any", "--out", tmp_path / "t2", *args
    )
    assert result.returncode == 0, result.stderr
    counts = json.loads((tmp_path / "t2" / "types.json").read_text())["counts"]
    assert (counts["T1"], counts["T2"], counts["T3"]) == (4, 3, 4)  # the paper's counting, per task
    result = run_bongard("analyze", "queries", queries, "--out", tmp_path / "q", *args)
    assert result.returncode == 0 and "positive_accuracy" in result.stdout
    assert (tmp_path / "q" / "query_category_accuracy.csv").read_text().count("\n") == 3
    assert all(
        (tmp_path / "q" / f"{name}.png").is_file() for name in ("query_accuracy", "query_category_accuracy")
    )
    result = run_bongard("analyze", "similarity", queries, *args)
    assert result.returncode == 0 and "negative" in result.stdout, result.stderr
    result = run_bongard("analyze", "queries", runs[0], *args)
    assert result.returncode == 2 and "classified no query images" in result.stderr
    result = run_bongard(
        "analyze", "types", "--open-ended", runs[1], "--probe", runs[1], "--hypotheses", runs[2], *args
    )
    assert result.returncode == 2 and "expected open-ended" in result.stderr
