"""Every strategy end to end on two real problems, with a real model for the text stages.

Image-free calls (the answer calls of descriptive, descriptive-iterative and
contrastive) go to the real llama.cpp server with Gemma 3 270M; it reads no
images and its answers are nonsense, so the tests check structure: every call
made and traced, tokens counted, an answer recorded. Calls that carry images
go to the scripted recording agent until the offline perception agent lands.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agents.managed import ManagedAgent
from agents.registry import resolve_agent
from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem
from graphs.nodes import SolveRuntime
from graphs.registry import DatasetContext, get_strategy, strategy_names
from graphs.solve import solve
from graphs.strategies.case_study_binary import RwrPlusTwoTestImages, TwoTestImages
from tests.scripted import ScriptedAgent
from tests.strategy_runs import both_sides_right

TEXT_ONLY_ANSWERS = {"descriptive", "descriptive-iterative", "contrastive"}
CASE_STUDY = sorted(name for name in strategy_names() if get_strategy(name).family == "case_study")


@pytest.fixture(scope="module")
def llama(module_home: Path) -> ManagedAgent:
    return resolve_agent("llamacpp:gemma3-270m", {"temperature": 0, "max_tokens": 48})


def test_every_built_in_strategy_states_its_calls_per_problem() -> None:
    assert [name for name in strategy_names() if get_strategy(name).count is None] == []


@pytest.mark.parametrize("name", CASE_STUDY)
@pytest.mark.parametrize("problem_id", ["1", "31"])
def test_strategy_runs_end_to_end(
    name: str, problem_id: str, rwr: list[BongardProblem], llama: ManagedAgent, tmp_path: Path
) -> None:
    problem = next(p for p in rwr if p.id == problem_id)
    images = ScriptedAgent(
        "scripted:vision", {TwoTestImages: both_sides_right, RwrPlusTwoTestImages: both_sides_right}
    )
    reasoner = llama if name in TEXT_ONLY_ANSWERS else images.managed()
    runtime = SolveRuntime(
        agents={"describer": images.managed(), "reasoner": reasoner}, render_dir=tmp_path / "renders"
    )
    answer = asyncio.run(solve(name, problem, runtime, context=DatasetContext.of(rwr), seed=7))
    assert answer.problem == f"bongard-rwr/{problem_id}" and answer.strategy == name
    assert len(answer.trace) == get_strategy(name).calls_for(problem)
    assert answer.text
    if name in TEXT_ONLY_ANSWERS:
        [final] = [call for call in answer.trace if call.agent == "llamacpp:gemma3-270m"]
        assert final.images == [] and final.input_tokens > 0 and final.output_tokens > 0
        assert final.cost_usd == 0.0 and answer.text == final.reply
    else:
        assert answer.parse_status == "ok"
    sent_a_sheet = any(len(refs) == 12 for call in answer.trace for refs in call.images)
    assert bool(list((tmp_path / "renders").rglob("*sheet*.png"))) == sent_a_sheet


def test_classic_problems_with_held_out_tests(shared_data: Path, tmp_path: Path) -> None:
    classic = open_dataset("bongard-classic", shared_data, {"holdout_test": "true"})
    problems = classic.scan().problems
    scripted = ScriptedAgent(
        replies={TwoTestImages: both_sides_right, RwrPlusTwoTestImages: both_sides_right}
    )
    runtime = SolveRuntime(
        agents={"default": scripted.managed()}, render_dir=tmp_path / "renders", variant="grey"
    )
    for problem in problems[:2]:
        answer = asyncio.run(solve("images-to-sides", problem, runtime, context=DatasetContext.of(problems)))
        assert answer.correct is True
        [request] = scripted.requests[-1:]
        assert request.images[0] == [p.ref for p in problem.context_panels] and len(request.images[0]) == 10
        assert all("grey" in path for path in request.image_paths())
