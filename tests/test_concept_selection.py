"""Concept-selection distractors: the papers' subsequent, word-disjoint rule, and the random draw.

The case study takes distractors from the problems that follow, semantically different from the
answer; the Bongard-RWR+ code makes that a walk over the concepts from the next problem on,
wrapping around, keeping those that share no word ("not" aside) with the answer or with any taken.
These tests hold that rule on the 60 real Bongard-RWR problems and on a small table built for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from datasets_io.problem import BongardProblem, Concept
from graphs.registry import DatasetContext, StrategyError
from graphs.solve import strategy_inputs
from graphs.strategies.rwr_plus import subsequent_distractors

COUNTS = [2, 4, 8, 16]


def words(left: str, right: str | None) -> set[str]:
    return set(re.findall(r"\w+", f"{left} {right or ''}".lower())) - {"not"}


def distractors(inputs: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """The candidates other than the true one, as (left, right) pairs in their shown order."""
    return [(c["left"], c["right"]) for c in inputs["candidates"] if c["label"] != inputs["label"]]


@pytest.fixture(scope="module")
def context(rwr: list[BongardProblem]) -> DatasetContext:
    return DatasetContext.of(rwr)


@pytest.mark.parametrize("count", COUNTS)
def test_no_distractor_shares_a_word_with_the_true_concept(
    count: int, rwr: list[BongardProblem], context: DatasetContext
) -> None:
    sharing = []
    for problem in rwr:
        assert problem.concept is not None
        own = words(problem.concept.left, problem.concept.right)
        inputs = strategy_inputs("concept-selection", problem, context, 0, {"concepts": count})
        pairs = distractors(inputs)
        assert len(pairs) == count - 1 and len(set(pairs)) == count - 1
        sharing += [(problem.id, pair) for pair in pairs if words(*pair) & own]
    assert sharing == []


@pytest.mark.parametrize("count", [2, 4, 8])
def test_distractors_are_the_first_word_disjoint_concepts_after_the_problem(
    count: int, rwr: list[BongardProblem], context: DatasetContext
) -> None:
    """Where the dataset holds enough, each distractor is the next concept in the walk that shares
    no word with the answer or an earlier distractor: every concept passed over shares one."""
    rows = [concept for _, concept in context.concepts]
    for start, problem in enumerate(rwr):
        assert problem.concept is not None and context.concepts[start][0] == problem.id
        taken = {
            pair: words(*pair)
            for pair in distractors(
                strategy_inputs("concept-selection", problem, context, 0, {"concepts": count})
            )
        }
        blocked = words(problem.concept.left, problem.concept.right)
        walk = [rows[(start + step) % len(rows)] for step in range(1, len(rows))]
        for concept in walk:
            if not taken:
                break
            pair = (concept.left, concept.right)
            if pair in taken:
                assert not taken[pair] & blocked, (problem.id, pair)
                blocked |= taken.pop(pair)
            else:
                assert words(*pair) & blocked, (problem.id, pair)


def test_fewer_candidates_are_a_prefix_of_more(rwr: list[BongardProblem], context: DatasetContext) -> None:
    for problem in rwr:
        most = subsequent_distractors(problem, context, 15)
        for count in COUNTS[:-1]:
            assert subsequent_distractors(problem, context, count - 1) == most[: count - 1]


def test_the_same_dataset_order_gives_the_same_candidates(
    rwr: list[BongardProblem], context: DatasetContext
) -> None:
    again = DatasetContext.of(list(rwr))
    reordered = DatasetContext.of(list(reversed(rwr)))
    changed = 0
    for problem in rwr:
        inputs = strategy_inputs("concept-selection", problem, context, 4, {"concepts": 8})
        assert strategy_inputs("concept-selection", problem, again, 4, {"concepts": 8}) == inputs
        for seed in (5, 6):
            shuffled = strategy_inputs("concept-selection", problem, context, seed, {"concepts": 8})
            assert set(distractors(shuffled)) == set(distractors(inputs))
        other = strategy_inputs("concept-selection", problem, reordered, 4, {"concepts": 8})
        changed += set(distractors(other)) != set(distractors(inputs))
    assert changed > 0


def test_the_rule_on_a_small_table(rwr_31: BongardProblem) -> None:
    """Problem 31 is "One line" vs "Two lines"; its walk runs 32, 33, 34, then wraps to 29, 30."""
    table = DatasetContext(
        (
            ("29", Concept(left="Large", right="NOT large")),
            ("30", Concept(left="Small circle", right="Large circle")),
            ("31", Concept(left="One line", right="Two lines")),
            ("32", Concept(left="TWO figures", right="Three figures")),
            ("33", Concept(left="Empty", right="Not empty")),
            ("34", Concept(left="Empty picture", right="Full picture")),
        )
    )
    lefts = [c.left for c in subsequent_distractors(rwr_31, table, 4)]
    # 32 shares "two" (in any case); 33 is next; 29 follows the wrap, its "NOT" not tying it to 33;
    # 34 and 30 share a word only with a distractor, so they come last, topping the list up.
    assert lefts == ["Empty", "Large", "Empty picture", "Small circle"]
    inputs = strategy_inputs("concept-selection", rwr_31, table, 0, {"concepts": 4})
    assert {c["left"] for c in inputs["candidates"]} == {"One line", "Empty", "Large", "Empty picture"}
    with pytest.raises(StrategyError, match=r"has 4 other concepts sharing no word .* 7 are needed"):
        strategy_inputs("concept-selection", rwr_31, table, 0, {"concepts": 8})
    with pytest.raises(StrategyError, match="not in the dataset context"):
        strategy_inputs("concept-selection", rwr_31, DatasetContext(table.concepts[:2]), 0, {"concepts": 2})


def test_random_draw_stays_an_option(
    rwr: list[BongardProblem], rwr_31: BongardProblem, context: DatasetContext
) -> None:
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
