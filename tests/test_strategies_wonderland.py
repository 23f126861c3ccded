"""Call structure of the Bongard-in-Wonderland tasks, and the hypothesis judging, on real problems."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem
from datasets_io.store import ResultsStore
from graphs.answer import Answer
from graphs.judging import candidate_texts, judge_run
from graphs.nodes import SolveRuntime
from graphs.registry import DatasetContext, Reused, StrategyError
from graphs.solve import solve, strategy_inputs
from graphs.wonderland import Hypotheses, OptionChoice, ProbeAnswer, ProbeDraft, SetRules, distinct_hypotheses
from tests.scripted import Request, ScriptedAgent, default_reply

CONTEXT = [f"left-{i}" for i in range(6)] + [f"right-{i}" for i in range(6)]


@pytest.fixture(scope="module")
def classic(shared_data: Path) -> list[BongardProblem]:
    return open_dataset("bongard-classic", shared_data).scan().problems


@pytest.fixture(scope="module")
def problem(classic: list[BongardProblem]) -> BongardProblem:
    return next(p for p in classic if p.id == "6")  # triangles vs quadrangles


class Recorded:
    def __init__(self, answer: Answer, author: ScriptedAgent, reasoner: ScriptedAgent) -> None:
        self.answer, self.author, self.reasoner = answer, author, reasoner


def run(
    name: str,
    problem: BongardProblem,
    classic: list[BongardProblem],
    tmp_path: Path,
    options: dict[str, Any] | None = None,
    reply: Callable[[Request], str] = default_reply,
    seed: int = 0,
) -> Recorded:
    author = ScriptedAgent("scripted:author", reply=reply)
    reasoner = ScriptedAgent("scripted:reasoner", reply=reply)
    runtime = SolveRuntime(
        agents={"author": author.managed(), "reasoner": reasoner.managed()}, render_dir=tmp_path / "renders"
    )
    context = DatasetContext.of(classic)
    answer = asyncio.run(solve(name, problem, runtime, context=context, options=options, seed=seed))
    return Recorded(answer, author, reasoner)


def test_open_ended_is_one_sheet_call_with_two_set_rules(
    problem: BongardProblem, classic: list[BongardProblem], tmp_path: Path
) -> None:
    result = run("open-ended", problem, classic, tmp_path)
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
    problem: BongardProblem, classic: list[BongardProblem], tmp_path: Path
) -> None:
    label = strategy_inputs("multiple-choice", problem, DatasetContext.of(classic), 0, {"choices": "10"})[
        "label"
    ]

    def choose(option: int) -> Callable[[Request], str]:
        return lambda request: json.dumps({"analysis": "", "option": option})

    right = run("multiple-choice", problem, classic, tmp_path, {"choices": "10"}, choose(label))
    [request] = right.reasoner.requests
    assert request.call.output_schema is OptionChoice and request.call.task == "select"
    assert len(request.call.extra["options"]) == 10 and request.images == [CONTEXT]
    prompt = str(request.messages[0].content)
    assert "Triangles | Quadrangles" in prompt
    assert (right.answer.label, right.answer.correct) == (label, True)
    wrong = run("multiple-choice", problem, classic, tmp_path, {"choices": "10"}, choose(label % 10 + 1))
    assert wrong.answer.correct is False and wrong.answer.expected == {"label": label}


def test_concept_probe_authors_one_probe_then_asks_each_panel_alone(
    problem: BongardProblem, classic: list[BongardProblem], tmp_path: Path
) -> None:
    result = run("concept-probe", problem, classic, tmp_path)
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


def test_one_wrong_panel_fails_the_concept_probe(
    problem: BongardProblem, classic: list[BongardProblem], tmp_path: Path
) -> None:
    def one_wrong(request: Request) -> str:
        if request.call.task == "probe" and request.images[0] == ["right-3"]:
            return json.dumps({"reasoning": "", "concept": 1})
        return default_reply(request)

    answer = run("concept-probe", problem, classic, tmp_path, reply=one_wrong).answer
    assert answer.correct is False and answer.details["panels_right"] == 11
    assert answer.sides["right-3"] == "left" and answer.expected["sides"]["right-3"] == "right"


def test_stored_probes_are_reused_without_an_author_call(
    problem: BongardProblem, classic: list[BongardProblem], tmp_path: Path
) -> None:
    earlier = Reused({"text": "Count the corners.", "author": "openai:gpt-4o"}, "run-1", "openai:gpt-4o")
    result = run("concept-probe", problem, classic, tmp_path, {"probes_from": earlier})
    assert result.author.requests == [] and len(result.reasoner.requests) == 12
    assert all("Count the corners." in str(r.messages[0].content) for r in result.reasoner.requests)
    assert result.answer.details["probe"]["from_run"] == "run-1"


def test_hypotheses_are_asked_for_with_the_sheet_and_kept_distinct(
    problem: BongardProblem, classic: list[BongardProblem], tmp_path: Path
) -> None:
    result = run("hypotheses", problem, classic, tmp_path)
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
        answer = {
            "strategy": "hypotheses",
            "problem": f"bongard-classic/{problem_id}",
            "text": "",
            "details": details,
        }
        store.save_item(run_id, f"bongard-classic/{problem_id}", 0, answer, None)
    assert candidate_texts({"details": found})[1] == "Left: Triangles\nRight: Quadrangles"
    dataset = open_dataset("bongard-classic", shared_data)
    report = asyncio.run(judge_run(store, run_id, dataset, ["embedding:0.9"], "all"))
    assert report.decisions[("bongard-classic/6", 0)].ok is True
    assert report.decisions[("bongard-classic/7", 0)].ok is False
