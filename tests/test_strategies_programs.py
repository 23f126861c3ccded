"""program-search and program-synthesis: panels grounded by the perception agent (offline), rules
proposed by a stand-in OpenAI-protocol server scripted turn by turn, on classic problem 1 (empty
panels on the left) with panels 5 and 11 held out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datasets_io.catalog import open_dataset
from graphs.answer import Answer
from graphs.registry import get_strategy
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_on_classic
from tests.sent_requests import sent_images
from tests.standins.protocols import OpenAIChat
from tests.standins.schema_replies import output_schema
from tests.standins.server import StandInServer

CONTEXT = 10
"""Classic problem 1's context panels with panels 5 and 11 held out."""
LEFT = [f"left-{n}" for n in range(5)]


def turns_of(body: dict[str, Any]) -> int:
    return sum(message["role"] == "user" for message in body["messages"])


def scripted(*programs: str) -> Callable[[Any], str]:
    """A proposer that answers its n-th turn with the n-th program."""
    return lambda body: json.dumps({"words": "scripted", "program": programs[turns_of(body) - 1]})


def synthesis(
    shared_data: Path, home: Path, proposer: Callable[[Any], str], *options: str
) -> tuple[Answer, list[dict[str, Any]]]:
    with StandInServer(OpenAIChat(), responder=proposer) as server:
        reasoner = f"openai-compatible:m@{server.url}/v1"
        flags = ("--strategy", "program-synthesis", "--describer", "perception", "--reasoner", reasoner)
        ran = run_on_classic("1", shared_data, home, *flags, *options)
        bodies = [request.body for request in server.model_requests()]
    assert ran.returncode == 0, ran.stderr
    store = ResultsStore(home / STORE_FILE)
    [(_, _, answer)] = store.answer_records(store.resolve_run("latest"))
    return answer, bodies


def last_question(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def test_a_proposer_right_on_its_second_turn_stops_there_after_feedback_naming_the_misplaced_panels(
    shared_data: Path, tmp_path: Path
) -> None:
    answer, bodies = synthesis(shared_data, tmp_path, scripted("figures > 100", "figures < 1", "true"))
    assert [turns_of(body) for body in bodies] == [1, 2]  # one conversation; no third turn
    first, second = bodies
    assert all(
        part.get("type") != "image_url"
        for m in first["messages"]
        if isinstance(m["content"], list)
        for part in m["content"]
    )
    assert "LEFT panels:\nleft-0: {" in last_question(first) and '"figures": 0.0' in last_question(first)
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    feedback = last_question(second)
    assert "Your program `figures > 100` was run on the 10 panels" in feedback
    assert "It puts left-0, left-1, left-2, left-3 and left-4 on the wrong side" in feedback
    assert answer.correct is True and answer.details["program"] == "figures < 1"
    assert (answer.details["context_correct"], answer.details["context_panels"]) == (CONTEXT, CONTEXT)
    assert [p["wrong"] for p in answer.details["proposals"]] == [LEFT, []]


def test_an_unreadable_program_is_told_why_and_the_best_of_the_turns_decides(
    shared_data: Path, tmp_path: Path
) -> None:
    answer, bodies = synthesis(
        shared_data, tmp_path, scripted("__import__('os')", "size > 2", "figures > 100"), "-S", "turns=3"
    )
    assert [turns_of(body) for body in bodies] == [1, 2, 3]
    assert "Your program could not be run: not a rule of the language" in last_question(bodies[1])
    assert "Your program could not be run: unknown symbol(s) size" in last_question(bodies[2])
    assert answer.details["program"] == "figures > 100" and answer.correct is False  # the only runnable one
    assert [p["error"] is None for p in answer.details["proposals"]] == [False, False, True]


def test_a_proposer_that_never_writes_a_program_leaves_the_tests_undecided(
    shared_data: Path, tmp_path: Path
) -> None:
    answer, bodies = synthesis(
        shared_data, tmp_path, lambda body: "I think it is emptiness.", "-S", "turns=2"
    )
    assert len(bodies) == 2
    assert answer.correct is False and answer.parse_status == "failed"
    assert answer.sides == {"left-test-5": None, "right-test-5": None}


@pytest.mark.parametrize("strategy", ["program-search", "program-synthesis"])
def test_offline_the_perception_agent_grounds_and_finds_the_rule_of_problem_1(
    strategy: str, shared_data: Path, tmp_path: Path
) -> None:
    ran = run_on_classic("1", shared_data, tmp_path, "--strategy", strategy, "--model", "perception")
    assert ran.returncode == 0, ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    [(_, _, answer)] = store.answer_records(store.resolve_run("latest"))
    assert answer.correct is True and answer.details["context_correct"] == CONTEXT
    assert answer.details["program"] and answer.details["misplaced"] == []
    summary = store.summary(store.resolve_run("latest"))
    grounding = CONTEXT + 2
    assert summary.calls == grounding + (1 if strategy == "program-synthesis" else 0)
    assert get_strategy(strategy).card is not None


def test_vlp_ranking_is_an_option_of_the_search_recorded_with_its_answer(
    shared_data: Path, tmp_path: Path
) -> None:
    def run(strategy: str) -> Any:
        return run_on_classic(
            "1", shared_data, tmp_path, "--strategy", strategy, "--model", "perception", "-S", "ranking=vlp"
        )

    ran = run("program-search")
    assert ran.returncode == 0, ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    [(_, _, answer)] = store.answer_records(store.resolve_run("latest"))
    assert answer.correct is True and answer.details["ranking"] == "vlp"
    refused = run("program-synthesis")  # it asks a model for rules; nothing to rank
    assert refused.returncode == 2 and "ranking" in refused.stderr


def test_vlp_grounding_proposes_a_vocabulary_then_asks_each_panel_about_every_symbol(
    shared_data: Path, tmp_path: Path
) -> None:
    """-S grounding=vocabulary: one call with the 10 context images proposes objects, properties and
    actions (the stand-in VLM: 'Figure', 'dot', 'Filled!'), named as symbols of the language; each
    panel is then asked about every one; the search finds the rule over them."""
    problem = open_dataset("bongard-classic", shared_data, {"holdout_test": "true"}).problem("1")
    left = {panel.path.read_bytes() for panel in [*problem.left, *problem.test_left]}

    def vlm(body: Any) -> str:
        if "objects" in (output_schema(body) or {}).get("properties", {}):
            return json.dumps({"objects": ["Figure", "dot"], "properties": ["Filled!"], "actions": []})
        [image] = sent_images(body)
        symbols = {"object_figure": 0 if image in left else 1, "object_dot": 0, "property_filled": 0}
        return json.dumps({"symbols": symbols})

    with StandInServer(OpenAIChat(), responder=vlm) as server:
        model = f"openai-compatible:m@{server.url}/v1"
        ran = run_on_classic(
            "1",
            shared_data,
            tmp_path,
            "--strategy",
            "program-search",
            "--model",
            model,
            "-S",
            "grounding=vocabulary",
        )
        bodies = [request.body for request in server.model_requests()]
    assert ran.returncode == 0, ran.stderr
    proposing = [b for b in bodies if "objects" in (output_schema(b) or {}).get("properties", {})]
    assert (
        len(proposing) == 1 and len(sent_images(proposing[0])) == CONTEXT and len(bodies) == 1 + CONTEXT + 2
    )
    asked = last_question(next(b for b in bodies if b not in proposing))
    assert "- object_figure (Figure: how many of them the image shows)" in asked
    assert "- property_filled (Filled!: 1 if something in the image has this property, else 0)" in asked
    store = ResultsStore(tmp_path / STORE_FILE)
    [(_, _, answer)] = store.answer_records(store.resolve_run("latest"))
    assert answer.correct is True and answer.details["program"] == "object_figure <= 0.5"
    assert get_strategy("program-search").calls_for(problem, {"grounding": "vocabulary"}) == 1 + CONTEXT + 2
