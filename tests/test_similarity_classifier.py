"""The Similarity Classifier: its decision rule on constructed embeddings, and the agent on constructed
images, on real Bongard-RWR panels through the strategies, on descriptions, and from the command line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import HumanMessage

from agents.call import CallSpec, ImageSource
from agents.image_embedders import ClassicalEmbedder, Embeddings, resolve_image_embedder
from agents.managed import AgentCallError, ManagedAgent
from agents.registry import AgentSpecError, resolve_agent
from agents.similarity import nearer_side, side_scores
from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem, Panel, Side
from graphs.case_study_binary import TwoTestImages
from graphs.nodes import SolveRuntime
from graphs.registry import DatasetContext
from graphs.rwr_plus import OneTestImage
from graphs.solve import solve
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


def test_the_classical_embedder_is_deterministic_and_unit_length(shared_data: Path) -> None:
    paths = [shared_data / "bongard-rwr" / "31" / "left" / f"{n}.jpg" for n in range(3)]
    first, again = (
        ClassicalEmbedder().embed_images(paths),
        resolve_image_embedder("classical").embed_images(paths),
    )
    assert first.shape[0] == 3 and np.array_equal(first, again)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(first[0], first[1])


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
        task="classify", output_schema=TwoTestImages,
        images=[sheet, *(ImageSource(path=t.path, panels=[t]) for t in (blue, red))],
        extra={"test_panels": [blue.ref, red.ref]},
    )  # fmt: skip
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
        task="classify", output_schema=TwoTestImages,
        extra={"test_panels": ["left-test-6", "right-test-6"], "descriptions": descriptions},
    )  # fmt: skip
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


def test_bongard_run_reports_the_similarity_classifiers_accuracy(tmp_path: Path) -> None:
    result = run_bongard(
        "run", "--strategy", "image-to-side", "--model", "similarity", "--dataset", "bongard-rwr",
        "--problems", "1-6", "--home", tmp_path / "home", cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "6/6 items done, 0 failed" in result.stdout and "cost $0.0000" in result.stdout
    row = next(
        line for line in result.stdout.splitlines() if "image-to-side" in line and "similarity" in line
    )
    assert "bongard-rwr" in row and "6" in row
    summary = json.loads(run_bongard("runs", "show", "latest", "--json", "--home", tmp_path / "home").stdout)
    assert summary["calls"] == 12 and summary["config"]["agents"]["reasoner"] == "similarity"
