"""The paradigm and Wonderland strategies end to end on two real problems, through the runner into a store.

Image stages go to the offline perception agent; text-only stages (the
componential reasoning call, the probe author) go to the real llama.cpp server
with Gemma 3 270M, whose answers are nonsense: these tests check that every
call is made by the right agent with the right images, that the items finish
and that answers and their stage-1 results are stored and reusable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from graphs.registry import get_strategy
from graphs.runs.runner import RunConfig
from tests.stored_runs import Stored, run_into_store

PROBLEMS = ["6", "31"]
GEMMA_READS = ["6"]
"""Componential analysis on one problem: each of its reasoning calls hands Gemma twelve panel
descriptions, thousands of tokens of prompt on two cores."""
PERCEPTION = "perception"
LLAMA = "llamacpp:gemma3-270m"
ROLES: dict[str, dict[str, str]] = {
    "direct-rule-learning": {"reasoner": PERCEPTION},
    "deductive-rule-learning": {"reasoner": PERCEPTION},
    "componential-analysis": {"describer": PERCEPTION, "reasoner": LLAMA},
    "open-ended": {"reasoner": PERCEPTION},
    "multiple-choice": {"reasoner": PERCEPTION},
    "concept-probe": {"author": LLAMA, "reasoner": PERCEPTION},
    "hypotheses": {"reasoner": PERCEPTION},
}
QUERIES = {"direct-rule-learning", "deductive-rule-learning", "componential-analysis"}
"""Strategies classifying query images: panels 5 and 11 are held out as the two queries."""


def run_strategy(
    strategy: str,
    home: Path,
    shared_data: Path,
    options: dict[str, str] | None = None,
    agents: dict[str, str] | None = None,
) -> Stored:
    config = RunConfig(
        strategy=strategy,
        dataset="bongard-classic",
        data_dir=str(shared_data),
        dataset_options={"holdout_test": "true"} if strategy in QUERIES else {},
        agents=agents or ROLES[strategy],
        agent_params={"temperature": 0, "max_tokens": 200},
        problems=problems_of(strategy),
        strategy_options=options or {},
        concurrency=1,
    )
    return run_into_store(home, config)


def problems_of(strategy: str) -> list[str]:
    return GEMMA_READS if ROLES[strategy].get("reasoner") == LLAMA else PROBLEMS


@pytest.mark.parametrize("strategy", sorted(ROLES))
def test_strategy_runs_end_to_end_into_the_store(strategy: str, module_home: Path, shared_data: Path) -> None:
    stored = run_strategy(strategy, module_home, shared_data)
    calls = stored.calls()
    classic = open_dataset(
        "bongard-classic", shared_data, {"holdout_test": "true"} if strategy in QUERIES else {}
    )
    problems = problems_of(strategy)
    assert len(calls) == sum(get_strategy(strategy).calls_for(classic.problem(p)) or 0 for p in problems)
    for agent, _, images in calls:
        assert (agent == PERCEPTION) == bool(images)  # images only to perception, text only to llama.cpp
    answers = stored.answers()
    assert set(answers) == {f"bongard-classic/{p}" for p in problems}
    for answer in answers.values():
        assert answer.strategy == strategy and answer.text


def test_rules_and_descriptions_and_probes_are_reused_across_runs(
    module_home: Path, shared_data: Path
) -> None:
    rules = run_strategy("deductive-rule-learning", module_home, shared_data)
    applied = run_strategy("deductive-rule-learning", module_home, shared_data, {"rules_from": rules.run_id})
    assert [task for _, task, _ in applied.calls()] == ["classify"] * 2 * len(PROBLEMS)
    for problem, answer in applied.answers().items():
        assert answer.details["rule_summary"] == rules.answers()[problem].details["rule_summary"]
        assert answer.details["rule_extraction"]["from_run"] == rules.run_id

    described = run_strategy("componential-analysis", module_home, shared_data)
    reasoned = run_strategy(
        "componential-analysis",
        module_home,
        shared_data,
        {"descriptions_from": described.run_id},
        agents={"describer": LLAMA, "reasoner": LLAMA},
    )
    assert {task for _, task, _ in reasoned.calls()} == {"classify"}
    assert all(a.details["describer"] == PERCEPTION for a in reasoned.answers().values())

    authored = run_strategy("concept-probe", module_home, shared_data)
    asked = run_strategy("concept-probe", module_home, shared_data, {"probes_from": authored.run_id})
    assert {task for _, task, _ in asked.calls()} == {"probe"}
    for problem, answer in asked.answers().items():
        assert answer.details["probe"]["text"] == authored.answers()[problem].details["probe"]["text"]
