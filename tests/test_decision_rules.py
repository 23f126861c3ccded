"""The rules that decide printed numbers and verdicts, pinned at their edges (issue 48, item 4).

Each test here was written against a mutant that survived the rest of the suite (`mutmut run` with
the `[tool.mutmut]` settings in pyproject.toml): a tie counted as a majority, `all` true of no
verdicts, a Wilson bound above 1, a design effect that counts empty problems, an `at-least:K` that
takes K = 0, an error message that says nothing. One mutant is left alive on purpose: `wilson`'s upper bound
clamped at 2 instead of 1, which no input reaches (a Wilson bound never exceeds 1; the clamp only
guards rounding).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datasets_io.problem import Concept
from datasets_io.records import Answer
from judges.ensemble import JudgeEnsemble
from judges.errors import JudgeError
from judges.verdict import Verdict, decide
from results.counting import Aggregate, AggregateError, solved_count
from results.intervals import clustered_wilson, design_effect, wilson
from results.report_rows import UnknownJudging, resolved_judging
from results.store import STORE_FILE, ResultsStore, judging_id


def verdicts(*labels: str) -> list[Verdict]:
    return [Verdict(judge=f"judge{n}", label=label) for n, label in enumerate(labels)]


@pytest.mark.parametrize(
    ("labels", "ok"),
    [((), False), (("ok",), True), (("ok", "ok"), True), (("ok", "abstain"), False)],
)
def test_all_needs_at_least_one_verdict_and_every_one_ok(labels: tuple[str, ...], ok: bool) -> None:
    assert decide(verdicts(*labels), "all").ok is ok


class Named:
    def __init__(self, name: str) -> None:
        self.name = name

    async def judge(self, concept: Concept, answer: str) -> Verdict:
        return Verdict(judge=self.name, label="ok")


def test_an_ensemble_refuses_no_judge_and_names_every_judge_given_twice() -> None:
    with pytest.raises(JudgeError) as none:
        JudgeEnsemble([])
    assert str(none.value) == "an ensemble needs at least one judge"
    with pytest.raises(JudgeError) as twice:
        JudgeEnsemble([Named("a"), Named("b"), Named("a"), Named("b"), Named("c")])
    assert str(twice.value) == (
        "judge a, b is named twice: each judge votes once (one judge could meet a vote alone); "
        "name each judge once"
    )


@pytest.mark.parametrize(
    ("successes", "trials", "interval"),
    [
        (0, 0, (None, None)),
        (1, 1, (0.207, 1.0)),  # one trial has an interval
        (10, 10, (0.722, 1.0)),  # the upper bound stops at 1
        (0, 10, (0.0, 0.278)),
        (71, 100, (0.615, 0.79)),  # the README's default run
    ],
)
def test_wilson_at_its_edges(
    successes: int, trials: int, interval: tuple[float | None, float | None]
) -> None:
    assert wilson(successes, trials) == interval


@pytest.mark.parametrize(
    ("right", "total", "effect"),
    [
        ([], [], 1.0),  # no cluster: no correlation to correct for
        ([1, 2], [1, 2], 1.5),  # every unit right: wholly correlated, the mean cluster size
        ([2, 0], [2, 0], 2.0),  # an empty problem is no cluster
        ([1, 1], [1, 2], 1.0),  # less spread than independent units: never below 1
    ],
)
def test_the_design_effect_at_its_edges(right: list[int], total: list[int], effect: float) -> None:
    assert design_effect(right, total) == pytest.approx(effect)


def test_the_design_effect_refuses_counts_that_do_not_pair() -> None:
    with pytest.raises(ValueError, match="zip"):
        design_effect([1, 1], [2])


def test_a_clustered_interval_of_nothing_is_none_and_of_all_or_nothing_problems_the_problems_one() -> None:
    assert clustered_wilson([], []) == (None, None)
    assert clustered_wilson([0, 0], [0, 0]) == (None, None)
    assert clustered_wilson([1], [1]) == wilson(1, 1)  # one image has an interval
    both_or_neither = ([2, 2, 0, 2], [2, 2, 2, 2])
    assert clustered_wilson(*both_or_neither) == wilson(3, 4)


@pytest.mark.parametrize(
    ("text", "kind", "at_least", "name"),
    [
        ("majority", "majority", 1, "majority"),
        ("mean", "mean", 1, "mean"),
        ("any", "any", 1, "any"),
        ("at-least:1", "at-least", 1, "at-least:1"),
        ("at-least:2", "at-least", 2, "at-least:2"),
    ],
)
def test_an_aggregate_is_read_from_its_name(text: str, kind: str, at_least: int, name: str) -> None:
    parsed = Aggregate.parse(text)
    assert (parsed.kind, parsed.at_least, parsed.name) == (kind, at_least, name)
    assert parsed.per_problem is (kind != "mean")


@pytest.mark.parametrize("text", ["at-least:0", "at-least:", "at-least:x", "most", "Majority", " any"])
def test_an_aggregate_that_is_no_form_is_refused_saying_the_forms(text: str) -> None:
    with pytest.raises(AggregateError) as refused:
        Aggregate.parse(text)
    assert (
        str(refused.value) == f"aggregate {text!r}: expected majority, mean, any or at-least:K (K at least 1)"
    )


@pytest.mark.parametrize(
    ("aggregate", "solved_attempts", "attempts", "value"),
    [
        ("majority", 2, 3, 1.0),
        ("majority", 1, 2, 0.0),  # a tie is no majority
        ("majority", 2, 4, 0.0),
        ("majority", 3, 4, 1.0),
        ("mean", 1, 3, 1 / 3),
        ("mean", 0, 0, 0.0),
        ("any", 1, 5, 1.0),
        ("any", 0, 5, 0.0),
        ("at-least:2", 2, 3, 1.0),
        ("at-least:2", 1, 3, 0.0),
        ("at-least:2", 3, 3, 1.0),
        ("at-least:2", 2, 5, 1.0),  # two of five: not a majority, but at least two
        ("at-least:1", 1, 3, 1.0),
    ],
)
def test_how_attempts_combine(aggregate: str, solved_attempts: int, attempts: int, value: float) -> None:
    assert Aggregate.parse(aggregate).solved(solved_attempts, attempts) == pytest.approx(value)


def test_at_least_k_is_refused_on_a_run_with_fewer_attempts_and_nothing_else_is() -> None:
    with pytest.raises(AggregateError) as refused:
        Aggregate.parse("at-least:3").check_attempts("run-x", 2)
    assert str(refused.value) == (
        "run run-x made 2 attempt(s) per problem: at-least:3 can never hold; use majority or any for it"
    )
    Aggregate.parse("at-least:3").check_attempts("run-x", 3)
    Aggregate.parse("majority").check_attempts("run-x", 1)


@pytest.mark.parametrize(("shares", "count"), [(2.5, 3), (2.49, 2), (0.0, 0), (0.5, 1)])
def test_a_tables_count_rounds_half_up(shares: float, count: int) -> None:
    assert solved_count(shares) == count


def judged_store(tmp_path: Path) -> tuple[ResultsStore, str, str]:
    """A store with one judged run (two judgings, the lenient one first) and one never judged."""
    store = ResultsStore(tmp_path / STORE_FILE)
    judged, never = (
        store.create_run({"strategy": "open-ended", "dataset": "d", "agents": {}}, "t") for _ in "ab"
    )
    for run_id in (judged, never):
        store.save_item(run_id, "d/1", 0, Answer(strategy="open-ended", problem="d/1", text="x"), None)
    for judging in ("strict|embedding:0.01", "strict|embedding:0.99"):
        store.save_judging(judged, "d/1", 0, judging, "vote:1", True, verdicts("ok"))
    return store, judged, never


def test_a_judging_is_named_by_its_name_or_its_short_id_on_every_judged_run(tmp_path: Path) -> None:
    store, judged, never = judged_store(tmp_path)
    lenient = "strict|embedding:0.01@vote:1"
    assert resolved_judging(store, [judged, never], lenient) == lenient
    assert resolved_judging(store, [never, judged], judging_id(lenient)) == lenient
    assert resolved_judging(store, [never], "anything") == "anything"  # nothing to choose from


def test_a_judging_a_judged_run_lacks_is_refused_naming_its_judgings(tmp_path: Path) -> None:
    store, judged, never = judged_store(tmp_path)
    with pytest.raises(UnknownJudging) as refused:
        resolved_judging(store, [never, judged], "strict|embedding:0.1@vote:1")
    names = [judging.name for judging in store.judgings(judged)]
    listed = ", ".join(f"{judging_id(name)} {name}" for name in names)
    assert str(refused.value) == (
        f"run {judged} has no judging 'strict|embedding:0.1@vote:1' (did you mean "
        f"'strict|embedding:0.01@vote:1'?); its judgings, oldest first: {listed} "
        f"(`bongard runs show {judged} --home {tmp_path}`)"  # the workspace the store is in
    )
