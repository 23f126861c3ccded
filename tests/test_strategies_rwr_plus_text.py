"""Call structure of the Bongard-RWR+ description tasks (D1S, D2S, CG) on a real Bongard-RWR problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datasets_io.problem import BongardProblem
from graphs.registry import DatasetContext, Reused, StrategyError
from graphs.solve import strategy_inputs
from graphs.strategies.rwr_plus_text import ConceptPair, DescriptionSide, OneDescription, TwoDescriptions
from tests.scripted import Request, SchemaReplies
from tests.strategy_runs import LABELS, StrategyRun, StrategyRunner, sides_asked

CONTEXT = [f"{side}-{n}" for side in ("left", "right") for n in range(6)]
TESTS = ["left-test-6", "right-test-6"]


def one_side(request: Request) -> OneDescription:
    [side] = sides_asked(request)
    return OneDescription(concept="", explanation="", answer=LABELS[side])


def two_sides(request: Request) -> TwoDescriptions:
    first, second = (DescriptionSide(explanation="", answer=LABELS[side]) for side in sides_asked(request))
    return TwoDescriptions(concept="scripted concept", first=first, second=second)


REPLIES: SchemaReplies = {
    OneDescription: one_side,
    TwoDescriptions: two_sides,
    ConceptPair: ConceptPair(
        explanation="scripted", left_concept="scripted left", right_concept="scripted right"
    ),
}
"""Every test description put on its true side; the concepts `scripted left` / `scripted right`."""


@pytest.fixture
def run(rwr: list[BongardProblem], tmp_path: Path) -> StrategyRunner:
    return StrategyRunner(tmp_path, context=DatasetContext.of(rwr), seed=3, replies=REPLIES)


def described(recorded: StrategyRun) -> dict[str, str]:
    """The describer's calls: each panel alone, in its own conversation, by panel ref."""
    found = {}
    for request in recorded.describer.requests:
        [[ref]] = request.images
        assert request.call.task == "describe" and len(request.messages) == 1
        found[ref] = f"described {[ref]}"
    return found


def test_description_to_side_describes_each_panel_alone_then_classifies_each_test_without_images(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("description-to-side", rwr_31)
    assert sorted(described(result)) == sorted(CONTEXT + TESTS)
    conversations = {t.conversation for t in result.answer.trace if t.role == "describer"}
    assert len(conversations) == 14  # every panel in its own context
    assert len(result.reasoner.requests) == 2
    for request in result.reasoner.requests:
        assert request.images == [] and request.image_paths() == []  # text only
        assert request.call.output_schema is OneDescription and request.call.task == "classify"
        [ref] = request.call.extra["test_panels"]
        texts = request.call.extra["descriptions"]
        assert texts["left"] == [f"described [{r!r}]" for r in CONTEXT[:6]]
        assert texts["tests"] == {ref: f"described [{ref!r}]"}
        sent = json.loads(request.text().rsplit("REQUEST\n", 1)[1].split("\nRESPONSE")[0])
        assert (
            sent["test_description"] == texts["tests"][ref] and sent["right_descriptions"] == texts["right"]
        )
    answer = result.answer
    assert answer.sides == {"left-test-6": "left", "right-test-6": "right"} and answer.correct is True
    assert answer.details["describer"] == "scripted:describer"
    assert set(answer.details["descriptions"]["panels"]) == set(CONTEXT + TESTS)
    assert answer.details["queries"]["left-test-6"] == {"rule": "", "query": "described ['left-test-6']"}


def test_descriptions_to_sides_asks_once_for_both_tests_in_a_seeded_order(
    rwr_31: BongardProblem, rwr: list[BongardProblem], run: StrategyRunner
) -> None:
    result = run("descriptions-to-sides", rwr_31)
    assert len(result.describer.requests) == 14
    [request] = result.reasoner.requests
    assert request.call.output_schema is TwoDescriptions and request.images == []
    order = strategy_inputs("descriptions-to-sides", rwr_31, DatasetContext.of(rwr), 3, {})["tests"]
    assert request.call.extra["test_panels"] == order and sorted(order) == TESTS
    assert result.answer.correct is True and result.answer.parse_status == "ok"
    orders = {
        tuple(strategy_inputs("descriptions-to-sides", rwr_31, DatasetContext(), s, {})["tests"])
        for s in range(8)
    }
    assert len(orders) == 2  # the seed decides which test comes first


def test_stored_descriptions_are_reasoned_over_without_describing(
    rwr_31: BongardProblem, rwr: list[BongardProblem], run: StrategyRunner
) -> None:
    panels: dict[str, Any] = {ref: f"stored {ref}" for ref in CONTEXT + TESTS}
    panels["left-0"] = {"scene": "a structured componential description"}
    reused = Reused({"describer": "openai:gpt-4o", "panels": panels}, "run-1", "openai:gpt-4o")
    result = run("descriptions-to-sides", rwr_31, reused={"descriptions_from": reused})
    assert result.describer.requests == []
    [request] = result.reasoner.requests
    left = request.call.extra["descriptions"]["left"]
    assert left[0] == '{"scene": "a structured componential description"}' and left[1] == "stored left-1"
    assert result.answer.details["describer"] == "openai:gpt-4o"
    assert result.answer.details["descriptions"]["from_run"] == "run-1"
    del panels["right-test-6"]
    with pytest.raises(StrategyError, match="run-1 has no description of bongard-rwr/31 right-test-6"):
        strategy_inputs("description-to-side", rwr_31, DatasetContext(), 0, {}, {"descriptions_from": reused})


def test_concept_generation_from_the_sheet_is_one_call_with_a_concept_pair(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("concept-generation", rwr_31)
    assert result.describer.requests == []
    [request] = result.reasoner.requests
    assert request.images == [CONTEXT] and request.call.images[0].layout == "sheet"
    assert request.call.output_schema is ConceptPair
    answer = result.answer
    assert (answer.left_rule, answer.right_rule) == ("scripted left", "scripted right")
    assert answer.text == "Left: scripted left\nRight: scripted right" and answer.correct is None


def test_concept_generation_from_descriptions_describes_the_context_then_asks_without_images(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("concept-generation", rwr_31, options={"input": "descriptions"})
    assert sorted(described(result)) == sorted(CONTEXT)  # the test panels are not needed
    [request] = result.reasoner.requests
    assert request.images == [] and "described ['right-5']" in request.text()
    assert result.answer.details["describer"] == "scripted:describer"
    with pytest.raises(StrategyError, match="input=images or input=descriptions"):
        strategy_inputs("concept-generation", rwr_31, DatasetContext(), 0, {"input": "audio"})
