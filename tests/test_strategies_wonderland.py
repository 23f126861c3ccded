"""Call structure of the Bongard-in-Wonderland tasks, and the hypothesis judging, on real problems."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem
from datasets_io.store import ResultsStore
from graphs.answer import Answer
from graphs.judging import candidate_texts, judge_run
from graphs.registry import DatasetContext, Reused, StrategyError
from graphs.solve import strategy_inputs
from graphs.wonderland import (
    Hypotheses,
    Hypothesis,
    OptionChoice,
    ProbeAnswer,
    ProbeDraft,
    SetRules,
    distinct_hypotheses,
)
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


def test_multiple_choice_lists_every_distinct_rule_pair_or_ten(
    problem: BongardProblem, classic: list[BongardProblem], tmp_path: Path
) -> None:
    context = DatasetContext.of(classic)
    distinct = {(c.left, c.right) for _, c in context.concepts}
    every = strategy_inputs("multiple-choice", problem, context, 0, {})
    assert len(every["options"]) == len(distinct)
    ten = strategy_inputs("multiple-choice", problem, context, 0, {"choices": "10"})
    assert [o["id"] for o in ten["options"]] == list(range(1, 11))
    true = next(o for o in ten["options"] if o["id"] == ten["label"])
    assert (true["left"], true["right"]) == ("Triangles", "Quadrangles")
    assert ten == strategy_inputs("multiple-choice", problem, context, 0, {"choices": "10"})
    assert ten != strategy_inputs("multiple-choice", problem, context, 1, {"choices": "10"})
    with pytest.raises(StrategyError, match="choices=all or a number"):
        strategy_inputs("multiple-choice", problem, context, 0, {"choices": "many"})


def test_multiple_choice_scores_the_chosen_id_exactly(
    problem: BongardProblem, classic: list[BongardProblem], run: StrategyRunner
) -> None:
    label = strategy_inputs("multiple-choice", problem, DatasetContext.of(classic), 0, {"choices": "10"})[
        "label"
    ]

    def choose(option: int) -> SchemaReplies:
        return REPLIES | {OptionChoice: OptionChoice(analysis="", option=option)}

    right = run("multiple-choice", problem, options={"choices": "10"}, replies=choose(label))
    [request] = right.reasoner.requests
    assert request.call.output_schema is OptionChoice and request.call.task == "select"
    assert len(request.call.extra["options"]) == 10 and request.images == [CONTEXT]
    prompt = str(request.messages[0].content)
    assert "Triangles | Quadrangles" in prompt
    assert (right.answer.label, right.answer.correct) == (label, True)
    wrong = run("multiple-choice", problem, options={"choices": "10"}, replies=choose(label % 10 + 1))
    assert wrong.answer.correct is False and wrong.answer.expected == {"label": label}


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
    assert all(len(r.images) == 1 and len(r.messages) == 1 and r.call.task == "probe" for r in asked)
    assert all(r.call.output_schema is ProbeAnswer for r in asked)
    assert all("Which of the two concepts does the figure show?" in str(r.messages[0].content) for r in asked)
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
    result = run("concept-probe", problem, options={"probes_from": earlier})
    assert result.author.requests == [] and len(result.reasoner.requests) == 12
    assert all("Count the corners." in str(r.messages[0].content) for r in result.reasoner.requests)
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
    assert candidate_texts({"details": found})[1] == "Left: Triangles\nRight: Quadrangles"
    dataset = open_dataset("bongard-classic", shared_data)
    report = asyncio.run(judge_run(store, run_id, dataset, ["embedding:0.9"], "all"))
    assert report.decisions[("bongard-classic/6", 0)].ok is True
    assert report.decisions[("bongard-classic/7", 0)].ok is False
