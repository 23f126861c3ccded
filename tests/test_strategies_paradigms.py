"""Call structure of the cognitive paradigms, request by request, on a real Bongard-RWR problem.

Problem 31 has one test image per side: two queries, `left-test-6` (positive)
and `right-test-6` (negative).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem
from graphs.answer import Answer
from graphs.nodes import SolveRuntime
from graphs.paradigms import ImageDescription, RuleExtraction
from graphs.queries import QueryConclusion, QueryVerdict
from graphs.registry import DatasetContext, Reused, StrategyError
from graphs.solve import solve
from tests.scripted import Request, ScriptedAgent, default_reply
from tests.test_loader_openworld import make_record, write_records

CONTEXT = [f"left-{i}" for i in range(6)] + [f"right-{i}" for i in range(6)]
QUERIES = ["left-test-6", "right-test-6"]


@pytest.fixture(scope="module")
def problem(shared_data: Path) -> BongardProblem:
    return open_dataset("bongard-rwr", shared_data).problem("31")


class Recorded:
    def __init__(self, answer: Answer, describer: ScriptedAgent, reasoner: ScriptedAgent) -> None:
        self.answer, self.describer, self.reasoner = answer, describer, reasoner


def run(
    name: str,
    problem: BongardProblem,
    tmp_path: Path,
    options: dict[str, Any] | None = None,
    reply: Callable[[Request], str] = default_reply,
) -> Recorded:
    describer = ScriptedAgent("scripted:describer", reply=reply)
    reasoner = ScriptedAgent("scripted:reasoner", reply=reply)
    runtime = SolveRuntime(
        agents={"describer": describer.managed(), "reasoner": reasoner.managed()},
        render_dir=tmp_path / "renders",
    )
    answer = asyncio.run(solve(name, problem, runtime, context=DatasetContext.of([problem]), options=options))
    return Recorded(answer, describer, reasoner)


def by_query(requests: list[Request]) -> dict[str, Request]:
    return {r.call.extra["test_panels"][0]: r for r in requests}


def assert_queries_scored(answer: Answer) -> None:
    assert answer.sides == {"left-test-6": "left", "right-test-6": "right"}
    assert answer.expected == {"sides": {"left-test-6": "left", "right-test-6": "right"}}
    assert answer.correct is True and answer.parse_status == "ok"
    assert answer.details["queries"]["left-test-6"]["conclusion"] == "positive"
    assert answer.details["queries"]["right-test-6"]["conclusion"] == "negative"


def test_direct_rule_learning_sends_thirteen_images_per_query(
    problem: BongardProblem, tmp_path: Path
) -> None:
    result = run("direct-rule-learning", problem, tmp_path)
    requests = by_query(result.reasoner.requests)
    assert set(requests) == set(QUERIES) and result.describer.requests == []
    for query, request in requests.items():
        assert request.images == [[ref] for ref in [*CONTEXT, query]]  # positives, negatives, the query last
        assert all(image.layout == "panel" for image in request.call.images)
        assert len(request.messages) == 1 and request.call.task == "classify"  # each query in its own context
        assert request.call.output_schema is QueryVerdict
    assert "13 images" in str(requests["left-test-6"].messages[0].content)
    assert_queries_scored(result.answer)
    assert len(result.answer.trace) == 2


def test_direct_rule_learning_without_chain_of_thought_asks_the_conclusion_alone(
    problem: BongardProblem, tmp_path: Path
) -> None:
    result = run("direct-rule-learning", problem, tmp_path, {"cot": "false"})
    assert all(r.call.output_schema is QueryConclusion for r in result.reasoner.requests)
    assert "Give no explanation" in str(result.reasoner.requests[0].messages[0].content)
    assert_queries_scored(result.answer)
    with pytest.raises(StrategyError, match="cot takes true or false"):
        run("direct-rule-learning", problem, tmp_path, {"cot": "maybe"})


def test_deductive_rule_learning_applies_the_summary_to_the_query_alone(
    problem: BongardProblem, tmp_path: Path
) -> None:
    result = run("deductive-rule-learning", problem, tmp_path)
    extract, *apply = result.reasoner.requests
    assert extract.images == [[ref] for ref in CONTEXT] and extract.call.task == "answer"
    assert extract.call.output_schema is RuleExtraction
    for query, request in by_query(apply).items():
        assert request.images == [[query]]  # no context image in stage 2
        assert len(request.messages) == 1
        assert "shapes on the left are round" in str(request.messages[0].content)
        assert request.call.extra["rule_summary"] == "shapes on the left are round"
    assert_queries_scored(result.answer)
    assert result.answer.details["rule_summary"] == "shapes on the left are round"
    assert result.answer.details["rule_extraction"]["over_limit"] is False


def summaries(*texts: str) -> Callable[[Request], str]:
    """Stage-1 replies with these summaries in turn; everything else as usual."""
    given = iter(texts)

    def reply(request: Request) -> str:
        if request.call.output_schema is RuleExtraction:
            return json.dumps({"analysis": "a", "rule": "r", "summary": next(given)})
        return default_reply(request)

    return reply


def test_a_summary_over_twenty_words_is_re_asked_once_in_the_same_conversation(
    problem: BongardProblem, tmp_path: Path
) -> None:
    long = " ".join(f"word{i}" for i in range(25))
    result = run("deductive-rule-learning", problem, tmp_path, reply=summaries(long, "round shapes only"))
    first, second, *apply = result.reasoner.requests
    assert second.messages[: len(first.messages)] == first.messages and len(second.messages) == 3
    assert "25 words" in str(second.messages[-1].content) and second.call.extra["retry"] is True
    assert all(r.call.extra["rule_summary"] == "round shapes only" for r in apply)
    assert len(apply) == 2


def test_a_summary_still_too_long_after_the_re_ask_is_cut_to_twenty_words(
    problem: BongardProblem, tmp_path: Path
) -> None:
    long = " ".join(f"word{i}" for i in range(30))
    result = run("deductive-rule-learning", problem, tmp_path, reply=summaries(long, long))
    stage_one = [r for r in result.reasoner.requests if r.call.output_schema is RuleExtraction]
    assert len(stage_one) == 2
    summary = result.answer.details["rule_summary"]
    assert summary.split() == long.split()[:20]
    assert result.answer.details["rule_extraction"]["over_limit"] is True


def test_rules_from_an_earlier_run_skip_stage_one(problem: BongardProblem, tmp_path: Path) -> None:
    earlier = Reused({"summary": "the figure is a triangle", "rule": "r"}, "run-1", "openai:gpt-4o")
    result = run("deductive-rule-learning", problem, tmp_path, {"rules_from": earlier})
    assert all(r.call.output_schema is QueryVerdict for r in result.reasoner.requests)
    assert len(result.reasoner.requests) == 2
    assert all("the figure is a triangle" in str(r.messages[0].content) for r in result.reasoner.requests)
    extraction = result.answer.details["rule_extraction"]
    assert (extraction["from_run"], extraction["by"]) == ("run-1", "openai:gpt-4o")


def test_componential_analysis_describes_each_image_alone_then_reasons_over_text(
    problem: BongardProblem, tmp_path: Path
) -> None:
    result = run("componential-analysis", problem, tmp_path)
    described = result.describer.requests
    assert sorted(r.images[0][0] for r in described) == sorted([*CONTEXT, *QUERIES])
    assert all(len(r.messages) == 1 and len(r.images) == 1 for r in described)
    assert all(r.call.output_schema is ImageDescription and r.call.task == "describe" for r in described)
    for query, request in by_query(result.reasoner.requests).items():
        assert request.images == [] and request.image_paths() == []  # text only
        prompt = request.messages[0].content[0]["text"]  # type: ignore[index]
        positives, negatives, asked = (
            prompt.index("POSITIVE examples:"),
            prompt.index("NEGATIVE examples:"),
            prompt.index("QUERY image:"),
        )
        assert (
            positives < prompt.index("scripted ['left-0']") < negatives < prompt.index("scripted ['right-5']")
        )
        assert prompt.index(f"scripted [{query!r}]") > asked
    assert_queries_scored(result.answer)
    descriptions = result.answer.details["descriptions"]
    assert descriptions["describer"] == result.answer.details["describer"] == "scripted:describer"
    assert set(descriptions["panels"]) == {*CONTEXT, *QUERIES}
    ImageDescription.model_validate(descriptions["panels"]["left-0"])


def test_descriptions_from_an_earlier_run_are_reasoned_over_without_describing(
    problem: BongardProblem, tmp_path: Path
) -> None:
    first = run("componential-analysis", problem, tmp_path)
    stored = first.answer.details["descriptions"]
    earlier = Reused(stored, "run-1", "scripted:describer")
    result = run("componential-analysis", problem, tmp_path, {"descriptions_from": earlier})
    assert result.describer.requests == [] and len(result.reasoner.requests) == 2
    assert result.answer.details["describer"] == "scripted:describer"
    assert result.answer.details["descriptions"]["from_run"] == "run-1"
    partial = Reused({**stored, "panels": {"left-0": stored["panels"]["left-0"]}}, "run-2", "x")
    with pytest.raises(StrategyError, match="run-2 has no description of bongard-rwr/31"):
        run("componential-analysis", problem, tmp_path, {"descriptions_from": partial})


def test_query_strategies_refuse_problems_without_query_images(shared_data: Path, tmp_path: Path) -> None:
    classic = open_dataset("bongard-classic", shared_data).problem("6")
    with pytest.raises(StrategyError, match="holdout_test=true"):
        run("direct-rule-learning", classic, tmp_path)


def test_an_openworld_record_gives_a_positive_and_a_negative_query_with_its_category(
    data_dir: Path, tmp_path: Path
) -> None:
    root = data_dir / "bongard-openworld"
    write_records(root, "test", [make_record(root, "ow-7", common_sense="3")])
    record = open_dataset("bongard-openworld", data_dir).problem("ow-7")
    result = run("deductive-rule-learning", record, tmp_path)
    assert_queries_scored(result.answer)
    assert result.answer.details["category"] == "3"
    assert sorted(r.images[0][0] for r in result.reasoner.requests[1:]) == QUERIES
