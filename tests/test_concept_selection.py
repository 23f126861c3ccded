"""Concept-selection distractors as the Bongard-RWR+ authors' code builds them, and the options.

Their `get_negative_concept_indices` walks every row of `labels.csv` from the one after the
problem's, wrapping around, and keeps a row whose words (both rules joined, upper-case "NOT "
removed, split on spaces, lower-cased) have no common subsequence with the answer's or any kept
row's. These tests hold the toolkit to a separate re-implementation of that loop, on the 60 real
Bongard-RWR problems and on the 100 classic rules, whose table is the rules file in number order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.label_tables import LabelTable
from datasets_io.problem import BongardProblem, Concept
from graphs.registry import DatasetContext, StrategyError
from graphs.runs.runner import RunConfig
from graphs.solve import strategy_inputs
from graphs.strategies.rwr_plus import subsequent_distractors
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer
from tests.stored_runs import run_into_store

COUNTS = [2, 4, 8, 16]


def common_subsequence(first: list[str], second: list[str]) -> int:
    """The longest common subsequence of two word lists (textbook dynamic programming)."""
    lengths = [[0] * (len(second) + 1) for _ in range(len(first) + 1)]
    for i, word in enumerate(first):
        for j, other in enumerate(second):
            lengths[i + 1][j + 1] = (
                lengths[i][j] + 1 if word == other else max(lengths[i][j + 1], lengths[i + 1][j])
            )
    return lengths[-1][-1]


def authors_rule(rows: list[tuple[str, str]], positive: int, wanted: int) -> list[int] | None:
    """The rows the authors' loop takes for row `positive`, or None where it raises (or never ends)."""

    def words(row: int) -> list[str]:
        left, right = rows[row]
        return [word.lower() for word in f"{left} {right}".replace("NOT ", "").split(" ")]

    kept_words, kept = [words(positive)], list[int]()
    candidate, visited = positive + 1, 0
    while len(kept) < wanted:
        if candidate == positive or visited > len(rows):
            return None
        if candidate >= len(rows):
            candidate = 0
        if all(common_subsequence(other, words(candidate)) == 0 for other in kept_words):
            kept.append(candidate)
            kept_words.append(words(candidate))
        candidate, visited = candidate + 1, visited + 1
    return kept


def distractors(inputs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The candidates other than the true one, as (left, right) pairs in their shown order."""
    return [(c["left"], c["right"]) for c in inputs["candidates"] if c["label"] != inputs["label"]]


@pytest.fixture(scope="module", params=["bongard-rwr", "bongard-classic"])
def dataset(request: pytest.FixtureRequest, shared_data: Path) -> tuple[list[BongardProblem], DatasetContext]:
    opened = open_dataset(request.param, shared_data)
    problems = opened.scan().problems
    return problems, DatasetContext.of(problems, opened.label_table())


@pytest.mark.parametrize("count", [2, 4, 8])
def test_distractor_sets_equal_the_authors_rule(
    count: int, dataset: tuple[list[BongardProblem], DatasetContext]
) -> None:
    problems, context = dataset
    table = context.label_table()
    rows = [(concept.left, concept.stated_right) for concept in table.rows]
    assert len(rows) == 100  # the table is every classic rule, for Bongard-RWR's 60 problems too
    differing, refused = [], 0
    for problem in problems:
        expected = authors_rule(rows, table.row_of[problem.id], count - 1)
        if expected is None:
            refused += 1
            with pytest.raises(StrategyError, match=r"the authors' rule finds \d+ of the"):
                strategy_inputs("concept-selection", problem, context, 0, {"concepts": count})
            continue
        inputs = strategy_inputs("concept-selection", problem, context, 0, {"concepts": count})
        if set(distractors(inputs)) != {rows[row] for row in expected}:
            differing.append(problem.id)
    assert differing == [] and refused == 0


def test_at_k_16_the_rule_cannot_fill_a_set_and_the_run_is_told_how_to_go_on(
    dataset: tuple[list[BongardProblem], DatasetContext],
) -> None:
    """No problem of either dataset has 15 mutually disjoint rules among the 100: each refuses in one
    line naming both ways on; `subsequent-filled` tops up with rows sharing no word with the answer."""
    problems, context = dataset
    rows = [(concept.left, concept.stated_right) for concept in context.label_table().rows]
    for problem in problems:
        assert authors_rule(rows, context.label_table().row_of[problem.id], 15) is None
        with pytest.raises(StrategyError) as refused:
            strategy_inputs("concept-selection", problem, context, 0, {"concepts": 16})
        assert "distractors=subsequent-filled" in str(refused.value) and "\n" not in str(refused.value)
        filled = strategy_inputs(
            "concept-selection", problem, context, 0, {"concepts": 16, "distractors": "subsequent-filled"}
        )
        own = problem.concept
        assert own is not None and len(set(distractors(filled))) == 15
        first = authors_rule(rows, context.label_table().row_of[problem.id], 1)
        assert first is None or rows[first[0]] in distractors(filled)  # the rule's picks come first


def test_fewer_candidates_are_a_prefix_of_more(dataset: tuple[list[BongardProblem], DatasetContext]) -> None:
    problems, context = dataset
    for problem in problems:
        most = subsequent_distractors(problem, context, 15, filled=True)
        for count in COUNTS[:-1]:
            assert subsequent_distractors(problem, context, count - 1, filled=True) == most[: count - 1]


def test_the_rule_on_a_small_table(rwr_31: BongardProblem) -> None:
    """Problem 31 is "One line" vs "Two lines"; its walk runs 32, 33, 34, then wraps to 29, 30."""
    rows = {
        "29": Concept(left="Large", right="NOT large"),
        "30": Concept(left="Small circle", right="Large circle"),
        "31": Concept(left="One line", right="Two lines"),
        "32": Concept(left="TWO figures", right="Three figures"),
        "33": Concept(left="Empty", right="not empty"),
        "34": Concept(left="Empty picture", right="Full picture"),
    }
    context = DatasetContext(tuple(rows.items()))
    lefts = [c.left for c in subsequent_distractors(rwr_31, context, 2)]
    # 32 shares "two" (in any case); 33 is next; 29 follows the wrap: its upper-case "NOT " goes, and
    # "large" is not 33's; 34 shares "empty" with 33 and 30 "large" with 29.
    assert lefts == ["Empty", "Large"]
    with pytest.raises(StrategyError, match=r"finds 2 of the 3 distractors K=4 needs for bongard-rwr/31"):
        strategy_inputs("concept-selection", rwr_31, context, 0, {"concepts": 4})
    filled = subsequent_distractors(rwr_31, context, 3, filled=True)
    assert [c.left for c in filled] == ["Empty", "Large", "Empty picture"]  # shares a word with 33 only
    lower_not = DatasetContext((("31", rows["31"]), ("1", Concept(left="Lines", right="not one"))))
    with pytest.raises(StrategyError):  # a lower-case "not" is a word like any other: "one" clashes
        subsequent_distractors(rwr_31, lower_not, 1)
    with pytest.raises(StrategyError, match="has no row in the concept table"):
        strategy_inputs(
            "concept-selection", rwr_31, DatasetContext(tuple(rows.items())[:2]), 0, {"concepts": 2}
        )


def test_a_dataset_with_a_label_table_walks_it_not_its_problems(rwr_31: BongardProblem) -> None:
    """The authors' pool is every row of the table: a rule of a problem the user lacks still counts."""
    own = Concept(left="One line", right="Two lines")
    table = LabelTable("labels.csv", (own, Concept(left="Dots", right="Crosses")), {"31": 0})
    context = DatasetContext((("31", own),), table)
    inputs = strategy_inputs("concept-selection", rwr_31, context, 0, {"concepts": 2})
    assert distractors(inputs) == [("Dots", "Crosses")]


def test_a_concept_without_a_right_rule_is_listed_as_its_negation(rwr_31: BongardProblem) -> None:
    """Bongard-OpenWorld states no right rule: the candidate says NOT <left>, as every other task does."""
    rows = (("31", Concept(left="One line", right="Two lines")), ("5", Concept(left="A dog on grass")))
    inputs = strategy_inputs("concept-selection", rwr_31, DatasetContext(rows), 0, {"concepts": 2})
    assert distractors(inputs) == [("A dog on grass", "NOT A dog on grass")]


def test_the_same_table_gives_the_same_candidates_and_the_seed_only_shuffles(
    dataset: tuple[list[BongardProblem], DatasetContext],
) -> None:
    problems, context = dataset
    for problem in problems[:20]:
        inputs = strategy_inputs("concept-selection", problem, context, 4, {"concepts": 4})
        for seed in (5, 6):
            shuffled = strategy_inputs("concept-selection", problem, context, seed, {"concepts": 4})
            assert set(distractors(shuffled)) == set(distractors(inputs))


def test_random_draw_stays_an_option(rwr: list[BongardProblem], rwr_31: BongardProblem) -> None:
    context = DatasetContext.of(rwr)
    options = {"concepts": "8", "distractors": "random"}
    drawn = strategy_inputs("concept-selection", rwr_31, context, 5, options)
    assert strategy_inputs("concept-selection", rwr_31, context, 5, options) == drawn
    draws = {
        frozenset(distractors(strategy_inputs("concept-selection", rwr_31, context, s, options)))
        for s in range(6)
    }
    assert len(draws) > 1
    assert ("One line", "Two lines") not in set().union(*draws)
    with pytest.raises(StrategyError, match="distractors"):
        strategy_inputs("concept-selection", rwr_31, context, 0, {"distractors": "nearest"})


def test_a_run_on_the_classic_problems_walks_the_rules_file(tmp_path: Path, shared_data: Path) -> None:
    """Through the runner, on the wire: problem 100's walk wraps to the first rules of the file, which a
    run of problems 90-100 alone does not hold; every request lists the authors' candidates."""
    reply = json.dumps({"explanation": "the first fits", "label": 1})
    numbers = range(90, 101)
    with StandInServer(OpenAIChat(), lambda body: reply) as server:
        config = RunConfig(
            strategy="concept-selection",
            dataset="bongard-classic",
            data_dir=str(shared_data),
            agents={"reasoner": f"openai-compatible:chooser@{server.url}/v1"},
            problems=[str(number) for number in numbers],
            strategy_options={"concepts": "4"},
        )
        run_into_store(tmp_path, config)
        prompts = [str(request.body["messages"][0]["content"]) for request in server.model_requests()]
    table = open_dataset("bongard-classic", shared_data).label_table()
    assert table is not None
    rows = [(concept.left, concept.stated_right) for concept in table.rows]
    expected = set()
    for number in numbers:
        taken = authors_rule(rows, number - 1, 3)
        assert taken is not None
        expected.add(frozenset(rows[row] for row in [number - 1, *taken]))
    assert min(authors_rule(rows, 99, 3) or [0]) < 89  # problem 100 takes rules of problems outside the run
    sent = {frozenset((c["left"], c["right"]) for c in listed_candidates(prompt)) for prompt in prompts}
    assert len(prompts) == len(numbers), prompts[:1]
    assert sent == expected


def listed_candidates(prompt: str) -> list[dict[str, Any]]:
    """The candidates a concept-selection prompt lists: the JSON object after its worked examples."""
    start = prompt.rindex('{"concepts"')  # after the worked examples' lists
    listed, _ = json.JSONDecoder().raw_decode(prompt[start:])
    return list(listed["concepts"])
