"""The Similarity Classifier: its decision rule (per side, a pair jointly, raw or unit-length features) on
constructed embeddings, and the agent on constructed images, on real Bongard-RWR panels through the
strategies, on descriptions, and from the command line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import HumanMessage

from agents.call import CallSpec, ImageSource
from agents.image_embedders import ClassicalEmbedder, Embeddings, resolve_image_embedder, unit_rows
from agents.managed import AgentCallError, ManagedAgent
from agents.registry import AgentSpecError, resolve_agent
from agents.similarity import Assignment, SimilarityChatModel, classify, joint_sides, nearer_side, side_scores
from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem, Panel, Side
from graphs.nodes import SolveRuntime
from graphs.registry import DatasetContext
from graphs.solve import solve
from graphs.strategies.case_study_binary import TwoTestImages
from graphs.strategies.rwr_plus import OneTestImage
from tests.builders import make_image
from tests.cli import run_bongard


def unit(*rows: list[float]) -> Embeddings:
    vectors = np.array(rows, dtype=np.float32)
    return np.asarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), dtype=np.float32)


def test_the_side_whose_farthest_panel_is_nearer_wins() -> None:
    # left: one panel at the test, one far off; right: two panels moderately near.
    context: dict[Side, Embeddings] = {"left": unit([1, 0], [-1, 0.1]), "right": unit([1, 1], [1, -1])}
    test = unit([1, 0])[0]
    largest = side_scores(context, test, "euclidean", "max")
    assert largest["left"] == pytest.approx(np.linalg.norm(context["left"][1] - test))
    assert nearer_side(largest) == "right"  # the paper's rule: the smaller largest distance
    assert nearer_side(side_scores(context, test, "euclidean", "min")) == "left"
    assert nearer_side(side_scores(context, test, "euclidean", "mean")) == "right"
    cosine = side_scores(context, test, "cosine", "max")
    assert cosine["right"] == pytest.approx(1 - np.sqrt(0.5), abs=1e-6)
    assert nearer_side({"left": 0.5, "right": 0.5}) == "left"


Vectors = dict[str, list[float]]
"""Feature vectors by panel name (`left0`, `right1`, ...; `left` and `right` for the test panels)."""


class GivenEmbedder:
    """Hands back the feature vector named by each file's stem, as it is."""

    def __init__(self, vectors: Vectors) -> None:
        self.vectors = vectors
        self.spec = "given:" + json.dumps(vectors, sort_keys=True)

    def features(self, paths: Sequence[Path]) -> Embeddings:
        return np.array([self.vectors[path.stem] for path in paths], dtype=np.float32)

    def embed_images(self, paths: Sequence[Path]) -> Embeddings:
        return unit_rows(self.features(paths))


def given_call(tmp_path: Path, vectors: Vectors, tests: list[str], opposite: bool = True) -> CallSpec:
    """A classify call over panels `left0`, `right1`, ... and the test panels named (`left` or `right`,
    their true side), each image file standing for the vector of its name; a pair is said to belong to
    different sides unless `opposite` is False."""
    context = [
        Panel(path=make_image(tmp_path / f"{name}.png", (9, 9, 9)), side=name[:-1], index=int(name[-1]))
        for name in vectors
        if name not in ("left", "right")
    ]
    panels = {
        side: Panel(path=make_image(tmp_path / f"{side}.png", (9, 9, 9)), side=side, index=6, role="test")
        for side in tests
    }
    images = [
        ImageSource(path=context[0].path, panels=context, layout="sheet"),
        *(ImageSource(path=panels[side].path, panels=[panels[side]]) for side in tests),
    ]
    schema = TwoTestImages if len(tests) == 2 else OneTestImage
    return CallSpec(
        task="classify",
        output_schema=schema,
        images=images,
        extra={"test_panels": [panels[side].ref for side in tests], "opposite_sides": opposite},
    )


def sides_of(
    call: CallSpec, vectors: Vectors, assignment: Assignment = "joint", normalise: bool = False
) -> list[str]:
    found = classify(call, GivenEmbedder(vectors), "euclidean", "max", assignment, normalise)
    return [decision["answer"] for decision in found]


def test_a_pair_is_split_jointly_where_independent_decisions_put_both_on_one_side(tmp_path: Path) -> None:
    # On a line: left panels at 0 and 1, right at 4 and 5; the left test at 0.5, the right one at 2.4,
    # whose farthest left panel (2.4) is nearer than its farthest right one (2.6).
    vectors: Vectors = {
        "left0": [0, 0], "left1": [1, 0], "right0": [4, 0], "right1": [5, 0],
        "left": [0.5, 0], "right": [2.4, 0],
    }  # fmt: skip
    straight = given_call(tmp_path, vectors, ["left", "right"])
    assert sides_of(straight, vectors, "independent") == ["LEFT", "LEFT"]
    # jointly: 0.5 (left test, left) + 2.6 (right test, right) = 3.1 beats the swap's 4.5 + 2.4 = 6.9
    assert sides_of(straight, vectors) == ["LEFT", "RIGHT"]
    assert sides_of(given_call(tmp_path, vectors, ["right", "left"]), vectors) == ["RIGHT", "LEFT"]
    unsaid = given_call(tmp_path, vectors, ["left", "right"], opposite=False)
    assert sides_of(unsaid, vectors) == ["LEFT", "LEFT"]  # joint only when the call says the pair is split
    one = given_call(tmp_path, vectors, ["right"])
    assert sides_of(one, vectors) == ["LEFT"]  # a single test input is decided on its own
    second = classify(straight, GivenEmbedder(vectors), "euclidean", "max", "joint", False)[1]
    explanation = second["explanation"]
    assert "raw images" in explanation and "jointly" in explanation and "2.6000" in explanation
    assert joint_sides({"left": 1.0, "right": 2.0}, {"left": 2.0, "right": 1.0}) == ("left", "right")
    assert joint_sides({"left": 1.0, "right": 1.0}, {"left": 1.0, "right": 1.0}) == ("left", "right")
    assert joint_sides({"left": 2.0, "right": 1.5}, {"left": 0.4, "right": 1.0}) == ("right", "left")


def test_raw_and_unit_length_features_can_disagree(tmp_path: Path) -> None:
    # left panels point along x and are long; right ones point along y and are short. The test points
    # along x (left by direction) but is short (right by raw euclidean distance).
    vectors: Vectors = {
        "left0": [10, 0],
        "left1": [10, 1],
        "right0": [0, 1],
        "right1": [0.1, 1],
        "left": [1, 0.1],
    }
    call = given_call(tmp_path, vectors, ["left"])
    assert sides_of(call, vectors, normalise=False) == ["RIGHT"]
    assert sides_of(call, vectors, normalise=True) == ["LEFT"]
    cosine = classify(call, GivenEmbedder(vectors), "cosine", "max", "joint", False)
    assert cosine[0]["answer"] == "LEFT"  # cosine ignores length, raw or not


def test_the_paper_compares_raw_clip_features_and_classical_ones_are_unit_length() -> None:
    def built(spec: str, **params: object) -> SimilarityChatModel:
        inner = resolve_agent(spec, params, use_cache=False).inner
        assert isinstance(inner, SimilarityChatModel)
        return inner

    assert built("similarity:open_clip").normalise is False
    assert built("similarity:open_clip:ViT-B-32/none").normalise is False
    assert built("similarity").normalise is True
    assert built("similarity:open_clip", normalise=True).normalise is True
    assert built("similarity", normalise="false").normalise is False
    assert built("similarity").assignment == "joint"
    assert built("similarity", assignment="independent").assignment == "independent"
    with pytest.raises(AgentSpecError, match="assignment"):
        resolve_agent("similarity", {"assignment": "pairwise"})


def test_the_classical_embedder_is_deterministic_and_unit_length(shared_data: Path) -> None:
    paths = [shared_data / "bongard-rwr" / "31" / "left" / f"{n}.jpg" for n in range(3)]
    first, again = (
        ClassicalEmbedder().embed_images(paths),
        resolve_image_embedder("classical").embed_images(paths),
    )
    assert first.shape[0] == 3 and np.array_equal(first, again)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(first[0], first[1])
    raw = ClassicalEmbedder().features(paths)  # three unit-length blocks: scaling changes no order
    assert np.allclose(np.linalg.norm(raw, axis=1), np.sqrt(3), atol=1e-5)
    assert np.allclose(unit_rows(raw), first, atol=1e-6)


def coloured_problem(tmp_path: Path) -> tuple[list[Panel], Panel, Panel]:
    """Reddish panels on the left, bluish on the right, and a reddish and a bluish test image."""
    reds = [(200 + 10 * n, 40, 30) for n in range(5)]
    blues = [(30, 50, 200 + 10 * n) for n in range(5)]
    context = [
        Panel(path=make_image(tmp_path / f"{side}{n}.png", colour), side=side, index=n)
        for side, colours in (("left", reds), ("right", blues))
        for n, colour in enumerate(colours)
    ]
    red = Panel(path=make_image(tmp_path / "t-red.png", (225, 60, 40)), side="right", index=5, role="test")
    blue = Panel(path=make_image(tmp_path / "t-blue.png", (50, 40, 215)), side="left", index=5, role="test")
    return context, red, blue  # the test panels' sides are deliberately the wrong ones


def similarity_agent() -> ManagedAgent:
    return resolve_agent("similarity", use_cache=False)


def call_reply(agent: ManagedAgent, call: CallSpec) -> dict[str, Any]:
    reply = asyncio.run(agent.acall([HumanMessage(content="Which side?")], call))
    assert reply.parse_status == "ok", reply.parse_error
    assert reply.parsed is not None
    return reply.parsed


def test_images_go_to_the_side_they_resemble_whatever_side_the_panel_claims(tmp_path: Path) -> None:
    context, red, blue = coloured_problem(tmp_path)
    sheet = ImageSource(path=context[0].path, panels=context, layout="sheet")
    agent = similarity_agent()
    for test, expected in ((red, "LEFT"), (blue, "RIGHT")):
        images = [sheet, ImageSource(path=test.path, panels=[test])]
        call = CallSpec(
            task="classify", output_schema=OneTestImage, images=images, extra={"test_panels": [test.ref]}
        )
        parsed = call_reply(agent, call)
        assert parsed["answer"] == expected and "max euclidean distance" in parsed["explanation"]
    both = CallSpec(
        task="classify",
        output_schema=TwoTestImages,
        images=[sheet, *(ImageSource(path=t.path, panels=[t]) for t in (blue, red))],
        extra={"test_panels": [blue.ref, red.ref], "opposite_sides": True},
    )
    parsed = call_reply(agent, both)
    assert (parsed["first"]["answer"], parsed["second"]["answer"]) == ("RIGHT", "LEFT")


def test_descriptions_are_classified_by_minilm_embeddings() -> None:
    descriptions = {
        "left": [
            "a red apple on a wooden table",
            "two green apples in a bowl",
            "an apple tree in an orchard",
        ],
        "right": ["a blue car parked on a street", "a bus at a city stop", "a truck on a motorway"],
        "tests": {
            "left-test-6": "a basket full of ripe apples",
            "right-test-6": "a taxi driving through traffic",
        },
    }
    call = CallSpec(
        task="classify",
        output_schema=TwoTestImages,
        extra={
            "test_panels": ["left-test-6", "right-test-6"],
            "descriptions": descriptions,
            "opposite_sides": True,
        },
    )
    parsed = call_reply(similarity_agent(), call)
    assert (parsed["first"]["answer"], parsed["second"]["answer"]) == ("LEFT", "RIGHT")
    assert "descriptions (MiniLM)" in parsed["first"]["explanation"]


def test_it_refuses_what_it_cannot_do() -> None:
    with pytest.raises(AgentCallError, match="classify calls only"):
        asyncio.run(similarity_agent().acall([HumanMessage(content="Describe")], CallSpec(task="describe")))
    with pytest.raises(AgentSpecError, match="distance takes euclidean or cosine"):
        resolve_agent("similarity", {"distance": "manhattan"})
    with pytest.raises(AgentSpecError, match="unknown image embedder 'pixels'"):
        resolve_agent("similarity:pixels")


@pytest.fixture(scope="module")
def rwr(shared_data: Path) -> list[BongardProblem]:
    return open_dataset("bongard-rwr", shared_data).scan().problems


@pytest.mark.parametrize("strategy", ["image-to-side", "images-to-sides"])
def test_it_answers_the_real_rwr_strategies_deterministically(
    strategy: str, rwr: list[BongardProblem], tmp_path: Path
) -> None:
    problem = next(p for p in rwr if p.id == "31")
    runtime = SolveRuntime(agents={"reasoner": similarity_agent()}, render_dir=tmp_path)
    answers = [
        asyncio.run(solve(strategy, problem, runtime, context=DatasetContext.of(rwr), seed=0))
        for _ in range(2)
    ]
    first, second = answers
    assert first.parse_status == "ok" and set(first.sides) == {p.ref for p in problem.test_panels}
    assert all(side in ("left", "right") for side in first.sides.values())
    assert first.sides == second.sides and first.correct is not None
    assert all(call.agent == "similarity" and call.cost_usd == 0.0 for call in first.trace)


@pytest.mark.parametrize(("assignment", "solved"), [("joint", 31), ("independent", 14)])
def test_images_to_sides_on_the_60_rwr_problems(assignment: str, solved: int, tmp_path: Path) -> None:
    """The figure the README gives: the joint rule (the default) against deciding each test alone."""
    chosen = [] if assignment == "joint" else ["-M", "assignment=independent"]
    result = run_bongard(
        "run",
        "--strategy",
        "images-to-sides",
        "--model",
        "similarity",
        "--dataset",
        "bongard-rwr",
        *chosen,
        "--home",
        tmp_path / "home",
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert result.returncode == 0, result.stderr
    assert f"60/60 items done, 0 failed, {solved} solved" in result.stdout


def test_bongard_run_reports_the_similarity_classifiers_accuracy(tmp_path: Path) -> None:
    result = run_bongard(
        "run",
        "--strategy",
        "image-to-side",
        "--model",
        "similarity",
        "--dataset",
        "bongard-rwr",
        "--problems",
        "1-6",
        "--home",
        tmp_path / "home",
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert result.returncode == 0, result.stderr
    assert "6/6 items done, 0 failed" in result.stdout and "cost $0.0000" in result.stdout
    row = next(
        line for line in result.stdout.splitlines() if "image-to-side" in line and "similarity" in line
    )
    assert "bongard-rwr" in row and "6" in row
    summary = json.loads(run_bongard("runs", "show", "latest", "--json", "--home", tmp_path / "home").stdout)
    assert summary["calls"] == 12 and summary["config"]["agents"]["reasoner"] == "similarity"
