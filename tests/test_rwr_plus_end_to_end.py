"""D1S, D2S and CG end to end on two real problems, through the runner into a store.

The panel descriptions are the offline perception agent's, or a stand-in describer's where Gemma
reads them (`STANDIN_DESCRIBED`); the real llama.cpp server with Gemma 3 270M and the Similarity
Classifier (MiniLM over the descriptions) reason over them without images. Gemma's answers are
nonsense, so the tests check structure: calls, roles, images, stored answers, reuse of one
describer's descriptions by two reasoners, and the analyses. The runs use classic problems
(panels 5 and 11 held out); on Bongard-RWR photographs the perception agent finds many parts and
writes long descriptions, which the Similarity Classifier reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from graphs.registry import get_strategy
from graphs.runs.runner import RunConfig
from tests.cli import run_bongard
from tests.standins.server import StandInServer
from tests.stored_runs import Stored, run_into_store

PROBLEMS = ["6"]
"""One problem: the structure checked is per problem (the Bongard-RWR run below takes two)."""
PERCEPTION, LLAMA, SIMILARITY = "perception", "llamacpp:gemma3-270m", "similarity"
REASONER = {
    "description-to-side": LLAMA,
    "descriptions-to-sides": SIMILARITY,
    "concept-generation": LLAMA,
}
"""Gemma classifies D1S's test descriptions and writes CG's concepts; the Similarity Classifier
reasons over D2S's, whose one call over both test descriptions is checked on its recorded requests
in tests/test_strategies_rwr_plus_text.py."""
STANDIN_DESCRIBED = {"description-to-side", "concept-generation"}
"""The descriptions Gemma reads here are a stand-in describer's, a few words each: what these tests
check is the path from descriptions to Gemma's answers and the store. Gemma reading the perception
agent's twelve measured descriptions (some 7,200 tokens, 45 s of prompt on one core) is the
componential analysis in tests/test_paradigms_end_to_end.py; D2S's are the perception agent's."""
DESCRIBED = {"description-to-side": 12, "descriptions-to-sides": 12, "concept-generation": 10}
"""Panels described per problem: 5 + 5 context panels (classic, panels 5 and 11 held out), and the tests."""


def run(
    strategy: str,
    home: Path,
    shared_data: Path,
    reasoner: str,
    options: dict[str, str] | None = None,
    dataset: str = "bongard-classic",
    problems: list[str] = PROBLEMS,
    describer: str = PERCEPTION,
) -> Stored:
    config = RunConfig(
        strategy=strategy,
        dataset=dataset,
        data_dir=str(shared_data),
        dataset_options={"holdout_test": "true"} if dataset == "bongard-classic" else {},
        agents={"describer": describer, "reasoner": reasoner},
        agent_params={"temperature": 0, "max_tokens": 200},
        problems=problems,
        strategy_options=options or {},
        concurrency=1,
    )
    return run_into_store(home, config)


@pytest.mark.parametrize("strategy", sorted(DESCRIBED))
def test_describer_then_text_reasoner_into_the_store(
    strategy: str, module_home: Path, shared_data: Path, server: StandInServer
) -> None:
    options = {"input": "descriptions"} if strategy == "concept-generation" else {}
    describer = (
        f"openai-compatible:describer@{server.url}/v1" if strategy in STANDIN_DESCRIBED else PERCEPTION
    )
    stored = run(strategy, module_home, shared_data, REASONER[strategy], options, describer=describer)
    calls = stored.calls()
    classic = open_dataset("bongard-classic", shared_data, {"holdout_test": "true"})
    per_problem = [get_strategy(strategy).calls_for(classic.problem(p), options) for p in PROBLEMS]
    assert len(calls) == sum(n or 0 for n in per_problem)
    for agent, task, images in calls:
        assert (agent, task, len(images)) in {
            (describer, "describe", 1),
            (REASONER[strategy], "classify", 0),
            (REASONER[strategy], "answer", 0),
        }
    answers = stored.answers()
    assert set(answers) == {f"bongard-classic/{p}" for p in PROBLEMS}
    for answer in answers.values():
        assert answer.strategy == strategy and answer.details["describer"] == describer
        assert len(answer.details["descriptions"]["panels"]) == DESCRIBED[strategy]


def test_one_describers_descriptions_reasoned_over_by_two_reasoners(
    module_home: Path, shared_data: Path, server: StandInServer
) -> None:
    describer = f"openai-compatible:describer@{server.url}/v1"
    described = run("description-to-side", module_home, shared_data, LLAMA, describer=describer)
    by_similarity = run(
        "description-to-side", module_home, shared_data, SIMILARITY, {"descriptions_from": described.run_id}
    )
    assert {(agent, task) for agent, task, _ in by_similarity.calls()} == {(SIMILARITY, "classify")}
    for problem, answer in by_similarity.answers().items():
        assert (
            answer.details["descriptions"]["panels"]
            == described.answers()[problem].details["descriptions"]["panels"]
        )
        assert set(answer.sides.values()) <= {"left", "right"}  # the classifier always decides
    result = run_bongard(
        "analyze", "describers", described.run_id, by_similarity.run_id, "--home", module_home
    )
    assert result.returncode == 0, result.stderr
    assert "openai-compatible:describer" in result.stdout
    assert SIMILARITY in result.stdout and LLAMA in result.stdout


def test_concept_generation_from_the_sheet_is_scored_with_text_metrics(
    module_home: Path, shared_data: Path
) -> None:
    stored = run(  # the perception agent's rules, fast: two problems
        "concept-generation", module_home, shared_data, PERCEPTION, problems=["6", "31"]
    )
    assert [(agent, task, len(images)) for agent, task, images in stored.calls()] == [
        (PERCEPTION, "answer", 1)
    ] * 2
    for answer in stored.answers().values():
        assert answer.text.startswith("Left: ") and answer.left_rule and answer.right_rule
    result = run_bongard("analyze", "metrics", stored.run_id, "--home", module_home, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "bleu1" in result.stdout and "rouge_l" in result.stdout and "embedding" in result.stdout
    assert "4 (true, generated) rule pairs scored; 0 answers without rules skipped" in result.stdout
    judged = run_bongard(
        "judge", stored.run_id, "--judges", "embedding:0.7", "--home", module_home, timeout=300
    )
    assert judged.returncode == 0 and "2 answers judged" in judged.stdout, judged.stderr
    summary = json.loads(run_bongard("runs", "show", stored.run_id, "--json", "--home", module_home).stdout)
    assert summary["done"] == 2


def test_real_photographs_described_and_classified_by_the_similarity_classifier(
    module_home: Path, shared_data: Path
) -> None:
    stored = run(
        "descriptions-to-sides",
        module_home,
        shared_data,
        SIMILARITY,
        dataset="bongard-rwr",
        problems=["31", "63"],
    )
    assert len(stored.calls()) == 2 * 15
    for answer in stored.answers().values():
        assert sorted(answer.sides) == ["left-test-6", "right-test-6"] and answer.parse_status == "ok"
        assert "descriptions (MiniLM)" in answer.text
