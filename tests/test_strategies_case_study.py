"""Call structure of every case-study strategy, checked request by request on real problems.

A scripted agent records each request exactly as the strategy built it: its
messages (so shared conversations show as growing message lists), its task
kind, schema, and the panels behind every image.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, SystemMessage

from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem, Concept
from graphs.answer import parse_rules
from graphs.registry import DatasetContext, StrategyError, strategy_names
from graphs.solve import strategy_inputs
from graphs.strategies.case_study_binary import RwrPlusTwoTestImages, TwoTestImages, Verdict
from graphs.strategies.rwr_plus import OneTestImage, Selection
from tests.scripted import Request, SchemaReplies
from tests.strategy_runs import LABELS, StrategyRunner, both_sides_right, sides_asked, two_test_images

LEFT = [f"left-{i}" for i in range(6)]
RIGHT = [f"right-{i}" for i in range(6)]
SHEET = LEFT + RIGHT


def one_side_right(request: Request) -> OneTestImage:
    [side] = sides_asked(request)
    return OneTestImage(concept="", explanation="", answer=LABELS[side])


REPLIES: SchemaReplies = {
    Verdict: Verdict(verdict="OK"),
    TwoTestImages: both_sides_right,
    RwrPlusTwoTestImages: both_sides_right,
    OneTestImage: one_side_right,
    Selection: Selection(explanation="scripted", label=1),
}
"""Every verdict OK, every test image on its true side, the first candidate concept selected."""


@pytest.fixture(scope="module")
def context(rwr: list[BongardProblem]) -> DatasetContext:
    return DatasetContext.of(rwr)


@pytest.fixture
def run(context: DatasetContext, tmp_path: Path) -> StrategyRunner:
    return StrategyRunner(tmp_path, context=context, replies=REPLIES)


def is_prefix(earlier: Request, later: Request) -> bool:
    return later.messages[: len(earlier.messages)] == earlier.messages


def test_all_strategies_are_registered() -> None:
    assert set(strategy_names()) >= {
        "direct", "descriptive", "descriptive-iterative", "descriptive-direct", "contrastive",
        "contrastive-iterative", "contrastive-direct", "ground-truth", "incorrect-label", "images-to-sides",
        "image-to-side", "concept-selection",
    }  # fmt: skip


def test_direct_is_one_call_with_the_sheet(rwr_31: BongardProblem, run: StrategyRunner) -> None:
    result = run("direct", rwr_31)
    [request] = result.reasoner.requests
    assert result.describer.requests == []
    assert request.images == [SHEET] and request.call.images[0].layout == "sheet"
    assert len(request.messages) == 1 and request.call.task == "answer"
    assert "Bongard problem" in str(request.messages[0].content)  # the shared introduction
    assert (result.answer.left_rule, result.answer.right_rule) == (
        "scripted left rule",
        "scripted right rule",
    )
    [trace] = result.answer.trace
    assert (trace.role, trace.agent, trace.images) == ("reasoner", "scripted:reasoner", [SHEET])


@pytest.mark.parametrize(("name", "answer_images"), [("descriptive", []), ("descriptive-direct", [SHEET])])
def test_descriptive_describes_each_panel_alone_then_answers(
    name: str,
    answer_images: list[list[str]],
    rwr_31: BongardProblem,
    run: StrategyRunner,
) -> None:
    result = run(name, rwr_31)
    described = result.describer.requests
    assert len(described) == 12
    assert all(len(r.messages) == 1 and r.call.task == "describe" for r in described)  # 12 fresh contexts
    assert sorted(r.images[0][0] for r in described) == sorted(SHEET)
    assert all(len(r.images) == 1 and len(r.images[0]) == 1 for r in described)
    [answer] = result.reasoner.requests
    assert answer.images == answer_images and answer.call.task == "answer"
    prompt = str(answer.messages[-1].content)
    for ref in SHEET:
        assert f"described [{ref!r}]" in prompt
    assert (
        prompt.index("described ['left-0']")
        < prompt.index("described ['left-5']")
        < prompt.index("described ['right-0']")
    )
    assert len(result.answer.trace) == 13


def test_descriptive_iterative_keeps_one_conversation_per_side(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("descriptive-iterative", rwr_31)
    requests = result.describer.requests
    assert len(requests) == 14
    for side, refs in (("left", LEFT), ("right", RIGHT)):
        conversation = [r for r in requests if r.images and r.images[0][0].startswith(side)]
        assert len(conversation) == 7
        assert isinstance(conversation[0].messages[0], SystemMessage)
        for step, request in enumerate(conversation[:6]):
            assert request.images == [[ref] for ref in refs[: step + 1]]  # one new panel per turn
        closing = conversation[6]
        assert closing.images == [[ref] for ref in refs] and "final" in str(closing.messages[-1].content)
        for earlier, later in itertools.pairwise(conversation):
            assert is_prefix(earlier, later)
            assert isinstance(later.messages[len(earlier.messages)], AIMessage)
    [answer] = result.reasoner.requests
    assert answer.images == [] and answer.call.task == "answer"
    assert f"described {[LEFT[-1]]!r}" in str(answer.messages[-1].content)  # the closing reply of each side
    conversations = {t.conversation for t in result.answer.trace}
    assert conversations == {"left side", "right side", "answer"}


@pytest.mark.parametrize(("name", "answer_images"), [("contrastive", []), ("contrastive-direct", [SHEET])])
def test_contrastive_compares_each_pair_alone_then_answers(
    name: str,
    answer_images: list[list[str]],
    rwr_31: BongardProblem,
    run: StrategyRunner,
) -> None:
    result = run(name, rwr_31)
    pairs = result.describer.requests
    assert len(pairs) == 6
    assert sorted(tuple(map(tuple, r.images)) for r in pairs) == [
        ((f"left-{i}",), (f"right-{i}",)) for i in range(6)
    ]
    assert all(len(r.messages) == 1 and r.call.task == "compare" for r in pairs)
    [answer] = result.reasoner.requests
    assert answer.images == answer_images
    assert "COMPARISONS" in str(answer.messages[-1].content)


def test_contrastive_iterative_is_one_conversation_of_pairs_then_the_answer(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("contrastive-iterative", rwr_31)
    requests = result.reasoner.requests
    assert len(requests) == 7 and result.describer.requests == []
    for step, request in enumerate(requests[:6]):
        assert request.images[-2:] == [[f"left-{step}"], [f"right-{step}"]]
        assert len(request.images) == 2 * (step + 1)
    assert requests[6].call.task == "answer" and len(requests[6].images) == 12
    assert all(is_prefix(a, b) for a, b in itertools.pairwise(requests))
    assert {t.conversation for t in result.answer.trace} == {"pairs"}
    assert result.answer.left_rule == "scripted left rule"


def test_ground_truth_shows_the_true_concept(rwr_31: BongardProblem, run: StrategyRunner) -> None:
    result = run("ground-truth", rwr_31)
    [request] = result.reasoner.requests
    assert request.images == [SHEET] and request.call.task == "judge"
    assert request.call.output_schema is not None
    assert "Left: One line" in str(request.messages[0].content) and "Right: Two lines" in str(
        request.messages[0].content
    )
    assert (result.answer.label, result.answer.correct) == ("OK", True)


def test_incorrect_label_takes_the_concept_twenty_problems_on(
    rwr_31: BongardProblem, context: DatasetContext, run: StrategyRunner
) -> None:
    ids = [problem_id for problem_id, _ in context.concepts]
    expected = context.concepts[(ids.index("31") + 20) % len(ids)][1]
    result = run("incorrect-label", rwr_31)
    [request] = result.reasoner.requests
    assert f"Left: {expected.left}" in str(request.messages[0].content)
    assert (result.answer.label, result.answer.expected, result.answer.correct) == (
        "OK",
        {"verdict": "WRONG"},
        False,
    )


def test_incorrect_label_moves_past_an_equal_concept(rwr_31: BongardProblem) -> None:
    own = rwr_31.concept
    assert own is not None
    concepts = [(str(n), Concept(left=f"rule {n}", right=f"not {n}")) for n in range(40)]
    concepts[0] = ("31", own)
    concepts[20] = ("x", own)  # same concept twenty places on: skipped
    inputs = strategy_inputs("incorrect-label", rwr_31, DatasetContext(tuple(concepts)), 0, {})
    assert inputs["proposed"] == {"left": "rule 21", "right": "not 21"}


def test_images_to_sides_sends_the_tests_in_seeded_order(
    rwr_31: BongardProblem, context: DatasetContext, run: StrategyRunner
) -> None:
    orders = {
        seed: strategy_inputs("images-to-sides", rwr_31, context, seed, {})["order"] for seed in range(12)
    }
    assert orders[3] == strategy_inputs("images-to-sides", rwr_31, context, 3, {})["order"]
    assert len({tuple(order) for order in orders.values()}) == 2  # both orders occur across seeds
    seed = next(s for s, order in orders.items() if order[0] == "right-test-6")
    result = run("images-to-sides", rwr_31, seed=seed)
    [request] = result.reasoner.requests
    assert request.images == [SHEET, ["right-test-6"], ["left-test-6"]]
    assert request.call.task == "classify"
    assert result.answer.sides == {"right-test-6": "right", "left-test-6": "left"} and result.answer.correct


@pytest.mark.parametrize(("retry", "calls"), [("true", 2), ("false", 1)])
def test_images_to_sides_re_asks_once_when_both_get_one_side(
    retry: str, calls: int, rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    options = {"retry_same_side": retry}
    result = run(
        "images-to-sides",
        rwr_31,
        options=options,
        replies=REPLIES | {RwrPlusTwoTestImages: two_test_images("left", "left", RwrPlusTwoTestImages)},
    )
    requests = result.reasoner.requests
    assert len(requests) == calls
    if calls == 2:
        assert is_prefix(requests[0], requests[1])
        assert "different sides" in str(requests[1].messages[-1].content)
    assert result.answer.correct is False


def test_image_to_side_classifies_each_test_image_in_its_own_context(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("image-to-side", rwr_31)
    requests = result.reasoner.requests
    assert sorted(r.images[1][0] for r in requests) == ["left-test-6", "right-test-6"]
    assert all(r.images[0] == SHEET and len(r.images) == 2 and len(r.messages) == 1 for r in requests)
    assert result.answer.sides == {"left-test-6": "left", "right-test-6": "right"} and result.answer.correct


@pytest.mark.parametrize("count", [2, 4, 8, 16])
def test_concept_selection_candidates(count: int, rwr_31: BongardProblem, context: DatasetContext) -> None:
    """K = 16 takes `subsequent-filled`: the authors' rule cannot fill it (test_concept_selection.py)."""
    options = {"concepts": count, "distractors": "subsequent-filled" if count == 16 else "subsequent"}
    inputs = strategy_inputs("concept-selection", rwr_31, context, 5, options)
    candidates = inputs["candidates"]
    assert [c["label"] for c in candidates] == list(range(1, count + 1))
    pairs = [(c["left"], c["right"]) for c in candidates]
    assert len(set(pairs)) == count
    assert pairs[inputs["label"] - 1] == ("One line", "Two lines")
    assert strategy_inputs("concept-selection", rwr_31, context, 5, options) == inputs
    others = [strategy_inputs("concept-selection", rwr_31, context, s, options) for s in range(6, 12)]
    assert any(other != inputs for other in others)


def test_concept_selection_call_and_scoring(
    rwr_31: BongardProblem, context: DatasetContext, run: StrategyRunner
) -> None:
    result = run("concept-selection", rwr_31, seed=5, options={"concepts": 8})
    [request] = result.reasoner.requests
    assert request.images == [SHEET] and request.call.task == "select"
    assert len(request.call.extra["candidates"]) == 8
    true_label = result.answer.expected["label"]
    assert result.answer.correct == (true_label == 1)
    with pytest.raises(StrategyError, match="concepts in"):
        strategy_inputs("concept-selection", rwr_31, context, 0, {"concepts": 3})


@pytest.mark.parametrize(
    "name", ["direct", "images-to-sides", "ground-truth", "concept-selection", "image-to-side"]
)
def test_a_malformed_reply_is_recorded_not_raised(
    name: str, rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run(name, rwr_31, replies=lambda request: "I cannot tell.")
    assert result.answer.parse_status == "failed" and result.answer.parse_error
    assert result.answer.correct in (None, False)


def test_strategies_needing_test_images_say_so(shared_data: Path, run: StrategyRunner) -> None:
    classic = open_dataset("bongard-classic", shared_data).problem("8")
    with pytest.raises(StrategyError, match="holdout_test=true"):
        run("images-to-sides", classic)


def test_parse_rules_reads_common_answer_shapes() -> None:
    assert parse_rules("Left: small\nRight: big") == ("small", "big")
    assert parse_rules("**Left side:** circles\n- **Right side** - triangles") == ("circles", "triangles")
    assert parse_rules("They differ in size.") == (None, None)
