"""Call structure of the Bongard-in-Wonderland tasks, and the hypothesis judging, on real problems."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem, Concept
from graphs.answer import Answer
from graphs.registry import DatasetContext, Reused, StrategyError
from graphs.runs.judging import candidate_texts, judge_run
from graphs.solve import strategy_inputs
from graphs.strategies.wonderland import (
    Hypotheses,
    Hypothesis,
    OptionChoice,
    ProbeAnswer,
    ProbeDraft,
    SetRules,
    distinct_hypotheses,
    numbered_pairs,
)
from results.store import ResultsStore
from tests.scripted import Request, SchemaReplies
from tests.strategy_runs import StrategyRunner

CONTEXT = [f"left-{i}" for i in range(6)] + [f"right-{i}" for i in range(6)]


def probe_answer(request: Request) -> ProbeAnswer:
    """The concept the panel shows: 1 (the left one) for a left panel."""
    return ProbeAnswer(reasoning="scripted", concept=1 if request.images[-1][0].startswith("left") else 2)


def hypotheses(request: Request) -> Hypotheses:
    """As many distinct hypotheses as asked for."""
    count = int(request.call.extra.get("count", 20))
    return Hypotheses(
        hypotheses=[Hypothesis(set_a_rule=f"left {n}", set_b_rule=f"right {n}") for n in range(count)]
    )


REPLIES: SchemaReplies = {
    SetRules: SetRules(
        analysis="scripted", set_a_rule="scripted left rule", set_b_rule="scripted right rule"
    ),
    ProbeDraft: ProbeDraft(probe="Which of the two concepts does the figure show?"),
    ProbeAnswer: probe_answer,
    Hypotheses: hypotheses,
}
"""Set rules `scripted left rule` / `scripted right rule`, one probe, every panel probed right."""


@pytest.fixture(scope="module")
def problem(classic: list[BongardProblem]) -> BongardProblem:
    return next(p for p in classic if p.id == "6")  # triangles vs quadrangles


@pytest.fixture
def run(classic: list[BongardProblem], tmp_path: Path) -> StrategyRunner:
    return StrategyRunner(
        tmp_path, roles=("author", "reasoner"), context=DatasetContext.of(classic), replies=REPLIES
    )


def test_open_ended_is_one_sheet_call_with_two_set_rules(
    problem: BongardProblem, run: StrategyRunner
) -> None:
    result = run("open-ended", problem)
    [request] = result.reasoner.requests
    assert request.images == [CONTEXT] and request.call.images[0].layout == "sheet"
    assert request.call.output_schema is SetRules and request.call.task == "answer"
    assert "Set A" in str(request.messages[0].content)
    answer = result.answer
    assert (answer.left_rule, answer.right_rule) == ("scripted left rule", "scripted right rule")
    assert answer.text == "Left: scripted left rule\nRight: scripted right rule"
    assert answer.correct is None  # judged, not scored exactly


def shown_options(request: Request) -> dict[str, list[str]]:
    """The rule pairs as the prompt shows them: one JSON object, problem number -> [left, right]."""
    text = request.text()
    shown, _ = json.JSONDecoder().raw_decode(text, text.index("{", text.index("Rule pairs:")))
    assert isinstance(shown, dict)
    return shown


def classic_pairs(classic: list[BongardProblem]) -> dict[str, list[str]]:
    return {p.id: [p.concept.left, p.concept.stated_right] for p in classic if p.concept is not None}


def chose(option: int) -> SchemaReplies:
    return REPLIES | {OptionChoice: OptionChoice(analysis="", option=option)}


def test_multiple_choice_shows_all_hundred_pairs_by_problem_number_none_merged(
    problem: BongardProblem, classic: list[BongardProblem], run: StrategyRunner
) -> None:
    """Wüst et al.'s code puts its whole solutions file in the prompt: 100 pairs keyed "1".."100"."""
    result = run("multiple-choice", problem, replies=chose(6))
    [request] = result.reasoner.requests
    assert request.call.output_schema is OptionChoice and request.call.task == "select"
    assert request.images == [CONTEXT] and request.call.images[0].layout == "sheet"
    shown = shown_options(request)
    assert list(shown) == [str(n) for n in range(1, 101)]
    assert shown == classic_pairs(classic)
    assert shown["6"] == shown["10"] == shown["96"] == shown["98"] == ["Triangles", "Quadrangles"]
    assert [o["id"] for o in request.call.extra["options"]] == list(range(1, 101))
    assert '"6": ["Triangles", "Quadrangles"]' in request.text()
    answer = result.answer
    assert (answer.label, answer.correct, answer.expected) == (6, True, {"label": 6})
    assert answer.details == {"options": 100, "accepted": [6, 10, 96, 98]}


def test_ten_options_hold_the_true_pair_and_nine_drawn_others_ordered_as_the_authors_code(
    problem: BongardProblem, classic: list[BongardProblem], run: StrategyRunner
) -> None:
    """The true pair and 9 other problems' pairs, drawn by the seed, in the order of their numbers as
    text ("10" before "6"), as sorting the authors' string-keyed dict gives."""
    context, pairs = DatasetContext.of(classic), classic_pairs(classic)
    draws = {}
    for seed in range(3):
        result = run("multiple-choice", problem, options={"choices": "10"}, seed=seed, replies=chose(6))
        [request] = result.reasoner.requests
        shown = shown_options(request)
        assert len(shown) == 10 and "6" in shown and shown == {n: pairs[n] for n in shown}
        assert list(shown) == sorted(shown)
        assert [str(o["id"]) for o in request.call.extra["options"]] == list(shown)
        assert result.answer.correct is True and result.answer.details["options"] == 10
        inputs = strategy_inputs("multiple-choice", problem, context, seed, {"choices": "10"})
        assert [str(o["id"]) for o in inputs["options"]] == list(shown)  # the seed alone fixes the draw
        draws[seed] = tuple(shown)
    assert len(set(draws.values())) == 3
    assert any(list(d) != sorted(d, key=int) for d in draws.values())  # "10" < "6": text order
    drawn = [
        {
            o["id"]
            for o in strategy_inputs("multiple-choice", problem, context, seed, {"choices": "10"})["options"]
        }
        for seed in range(200)
    ]
    assert all(6 in ids and len(ids) == 10 for ids in drawn)
    assert any(10 in ids for ids in drawn)  # a problem with the same pair is drawn like any other
    assert len(set().union(*drawn)) == 100
    with pytest.raises(StrategyError, match="choices=all or a number"):
        strategy_inputs("multiple-choice", problem, context, 0, {"choices": "many"})


@pytest.mark.parametrize(
    ("true", "chosen", "correct", "same_pair"),
    [
        ("6", 6, True, None),
        ("6", 10, True, True),  # 6, 10, 96, 98: one group in the authors' scoring
        ("85", 89, True, True),  # 85, 86, 88, 89: the other group
        ("36", 37, False, True),  # the same words, but not grouped there: only 36 counts
        ("6", 7, False, False),
    ],
)
def test_multiple_choice_accepts_the_true_number_and_the_authors_groups(
    classic: list[BongardProblem],
    run: StrategyRunner,
    true: str,
    chosen: int,
    correct: bool,
    same_pair: bool | None,
) -> None:
    problem = next(p for p in classic if p.id == true)
    answer = run("multiple-choice", problem, replies=chose(chosen)).answer
    assert (answer.label, answer.correct, answer.expected) == (chosen, correct, {"label": int(true)})
    assert answer.details.get("same_pair") is same_pair


def test_a_dataset_without_numbered_problems_is_numbered_in_its_order(problem: BongardProblem) -> None:
    other = Concept(left="Circles", right="Lines")
    context = DatasetContext((("first", other), ("second", Concept(left="Triangles", right="Quadrangles"))))
    listed, number = numbered_pairs(problem.model_copy(update={"id": "second"}), context)
    assert number == 2 and [(o["id"], o["left"]) for o in listed] == [(1, "Circles"), (2, "Triangles")]
    alone, number = numbered_pairs(problem, DatasetContext((("7", other),)))  # its own pair is added
    assert number == 6 and [o["id"] for o in alone] == [6, 7]


def test_concept_probe_authors_one_probe_then_asks_each_panel_alone(
    problem: BongardProblem, run: StrategyRunner
) -> None:
    result = run("concept-probe", problem)
    [authoring] = result.author.requests
    assert authoring.images == [] and authoring.call.task == "generate"
    assert authoring.call.output_schema is ProbeDraft
    prompt = str(authoring.messages[0].content)
    assert '"Triangles" / "Quadrangles"' in prompt
    assert "Clockwise spiral" in prompt and "cavity" in prompt  # the two worked probes
    asked = result.reasoner.requests
    assert sorted(r.images[0][0] for r in asked) == sorted(CONTEXT)
    assert all(len(r.images) == 1 and len(r.messages) == 2 and r.call.task == "probe" for r in asked)
    assert all(r.call.output_schema is ProbeAnswer for r in asked)
    assert all("abstract properties" in str(r.messages[0].content) for r in asked)  # the system turn
    assert all("Which of the two concepts does the figure show?" in str(r.messages[1].content) for r in asked)
    answer = result.answer
    assert answer.correct is True and answer.details["panel_accuracy"] == 1.0
    assert answer.details["probe"]["author"] == "scripted:author"


def test_one_wrong_panel_fails_the_concept_probe(problem: BongardProblem, run: StrategyRunner) -> None:
    def one_wrong(request: Request) -> ProbeAnswer:
        if request.call.task == "probe" and request.images[0] == ["right-3"]:
            return ProbeAnswer(reasoning="", concept=1)
        return probe_answer(request)

    answer = run("concept-probe", problem, replies=REPLIES | {ProbeAnswer: one_wrong}).answer
    assert answer.correct is False and answer.details["panels_right"] == 11
    assert answer.sides["right-3"] == "left" and answer.expected["sides"]["right-3"] == "right"


def test_stored_probes_are_reused_without_an_author_call(
    problem: BongardProblem, run: StrategyRunner
) -> None:
    earlier = Reused({"text": "Count the corners.", "author": "openai:gpt-4o"}, "run-1", "openai:gpt-4o")
    result = run("concept-probe", problem, reused={"probes_from": earlier})
    assert result.author.requests == [] and len(result.reasoner.requests) == 12
    assert all("Count the corners." in str(r.messages[-1].content) for r in result.reasoner.requests)
    assert result.answer.details["probe"]["from_run"] == "run-1"


def test_hypotheses_are_asked_for_with_the_sheet_and_kept_distinct(
    problem: BongardProblem, run: StrategyRunner
) -> None:
    result = run("hypotheses", problem)
    [request] = result.reasoner.requests
    assert request.images == [CONTEXT] and request.call.task == "hypothesize"
    assert request.call.output_schema is Hypotheses and request.call.extra == {"count": 20}
    assert "20 different hypotheses" in str(request.messages[0].content)
    assert len(result.answer.details["hypotheses"]) == 20
    proposed = [{"set_a_rule": "A", "set_b_rule": "B"}, {"set_a_rule": " a ", "set_b_rule": "b"}] + [
        {"set_a_rule": f"x{n}", "set_b_rule": "y"} for n in range(5)
    ]
    assert distinct_hypotheses(proposed, 3) == [["A", "B"], ["x0", "y"], ["x1", "y"]]


def test_hypotheses_are_judged_one_by_one_until_one_is_accepted(
    problem: BongardProblem, classic: list[BongardProblem], tmp_path: Path, shared_data: Path
) -> None:
    pytest.importorskip("sentence_transformers")
    store = ResultsStore(tmp_path / "store.sqlite")
    run_id = store.create_run({"strategy": "hypotheses", "dataset": "bongard-classic", "agents": {}}, "test")
    found = {"hypotheses": [["Circles", "Lines"], ["Triangles", "Quadrangles"], ["Big", "Small"]]}
    missing = {"hypotheses": [["Circles", "Lines"], ["Big figures", "Small figures"]]}
    for problem_id, details in (("6", found), ("7", missing)):
        answer = Answer(
            strategy="hypotheses", problem=f"bongard-classic/{problem_id}", text="", details=details
        )
        store.save_item(run_id, f"bongard-classic/{problem_id}", 0, answer, None)
    sixth = Answer(strategy="hypotheses", problem="bongard-classic/6", text="", details=found)
    assert candidate_texts(sixth)[1] == "Left: Triangles\nRight: Quadrangles"
    dataset = open_dataset("bongard-classic", shared_data)
    report = asyncio.run(judge_run(store, run_id, dataset, ["embedding:0.9"], "all"))
    assert report.decisions[("bongard-classic/6", 0)].ok is True
    assert report.decisions[("bongard-classic/7", 0)].ok is False
