"""Call structure of the cognitive paradigms, request by request, on a real Bongard-RWR problem.

Problem 31 has one test image per side: two queries, `left-test-6` (positive)
and `right-test-6` (negative).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem
from graphs.answer import Answer
from graphs.blocks.queries import CONCLUSION_SIDES, QueryConclusion, QueryVerdict
from graphs.registry import Reused, StrategyError, get_strategy
from graphs.strategies.paradigms import ImageDescription, RuleExtraction
from tests.openworld_releases import make_record, write_records
from tests.scripted import Request, SchemaReplies
from tests.strategy_runs import StrategyRunner, sides_asked

CONTEXT = [f"left-{i}" for i in range(6)] + [f"right-{i}" for i in range(6)]
QUERIES = ["left-test-6", "right-test-6"]


def concluded(request: Request) -> dict[str, str]:
    """The query's true conclusion (a left-side query is positive), and the other fields scripted."""
    [side] = sides_asked(request)
    conclusion = next(c for c, s in CONCLUSION_SIDES.items() if s == side)
    fields = QueryVerdict.model_fields if request.call.output_schema is QueryVerdict else {}
    return {"conclusion": conclusion} | {k: f"scripted {k}" for k in fields if k != "conclusion"}


def described(request: Request) -> ImageDescription:
    """A description whose every field names the panel: `scripted ['left-0']`."""
    named = f"scripted {request.images[-1]}"
    lists = {k for k, f in ImageDescription.model_fields.items() if f.annotation == list[str]}
    return ImageDescription.model_validate(
        {k: [named] if k in lists else f"scripted {k}" for k in ImageDescription.model_fields}
    )


SUMMARY = "shapes on the left are round"
REPLIES: SchemaReplies = {
    QueryVerdict: concluded,
    QueryConclusion: concluded,
    RuleExtraction: RuleExtraction(analysis="scripted", rule="scripted rule", summary=SUMMARY),
    ImageDescription: described,
}
"""Every query concluded correctly; the extracted rule summarised as SUMMARY."""


@pytest.fixture
def run(tmp_path: Path) -> StrategyRunner:
    return StrategyRunner(tmp_path, replies=REPLIES)


def by_query(requests: list[Request]) -> dict[str, Request]:
    return {r.call.extra["test_panels"][0]: r for r in requests}


def assert_queries_scored(answer: Answer) -> None:
    assert answer.sides == {"left-test-6": "left", "right-test-6": "right"}
    assert answer.expected == {"sides": {"left-test-6": "left", "right-test-6": "right"}}
    assert answer.correct is True and answer.parse_status == "ok"
    assert answer.details["queries"]["left-test-6"]["conclusion"] == "positive"
    assert answer.details["queries"]["right-test-6"]["conclusion"] == "negative"


def test_direct_rule_learning_sends_thirteen_images_per_query(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("direct-rule-learning", rwr_31)
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
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("direct-rule-learning", rwr_31, options={"cot": "false"})
    assert all(r.call.output_schema is QueryConclusion for r in result.reasoner.requests)
    assert "Give no explanation" in str(result.reasoner.requests[0].messages[0].content)
    assert_queries_scored(result.answer)
    with pytest.raises(StrategyError, match="cot takes true or false"):
        run("direct-rule-learning", rwr_31, options={"cot": "maybe"})


def test_deductive_rule_learning_applies_the_summary_to_the_query_alone(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("deductive-rule-learning", rwr_31)
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


def summaries(*texts: str) -> Callable[[Request], RuleExtraction]:
    """Stage-1 replies with these summaries in turn."""
    given = iter(texts)
    return lambda request: RuleExtraction(analysis="a", rule="r", summary=next(given))


def test_a_summary_over_twenty_words_is_kept_as_written_and_flagged(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    """Sec. 5.2, App. A.5.2.1 ask for 20 words and neither re-ask nor cut: the queries see it all."""
    long = " ".join(f"word{i}" for i in range(25))
    result = run("deductive-rule-learning", rwr_31, replies=REPLIES | {RuleExtraction: summaries(long)})
    extract, *apply = result.reasoner.requests
    assert extract.call.output_schema is RuleExtraction and len(apply) == 2
    assert all(r.call.output_schema is QueryVerdict for r in apply)
    assert all(r.call.extra["rule_summary"] == long and long in r.text() for r in apply)
    details = result.answer.details
    assert details["rule_summary"] == long
    assert (details["summary_words"], details["summary_over_limit"]) == (25, True)
    extraction = details["rule_extraction"]
    assert (extraction["summary"], extraction["words"], extraction["over_limit"]) == (long, 25, True)
    assert "written" not in extraction


def test_a_summary_within_twenty_words_is_not_flagged(rwr_31: BongardProblem, run: StrategyRunner) -> None:
    twenty = " ".join(f"word{i}" for i in range(20))
    result = run("deductive-rule-learning", rwr_31, replies=REPLIES | {RuleExtraction: summaries(twenty)})
    assert len(result.reasoner.requests) == 3
    details = result.answer.details
    assert (details["summary_words"], details["summary_over_limit"]) == (20, False)


def test_the_re_ask_is_an_option_asked_once_in_the_same_conversation(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    long = " ".join(f"word{i}" for i in range(25))
    result = run(
        "deductive-rule-learning",
        rwr_31,
        options={"reask_long_summary": "true"},
        replies=REPLIES | {RuleExtraction: summaries(long, "round shapes only")},
    )
    first, second, *apply = result.reasoner.requests
    assert second.messages[: len(first.messages)] == first.messages and len(second.messages) == 3
    assert "25 words" in str(second.messages[-1].content) and second.call.extra["retry"] is True
    assert all(r.call.extra["rule_summary"] == "round shapes only" for r in apply)
    assert len(apply) == 2
    assert (result.answer.details["summary_words"], result.answer.details["summary_over_limit"]) == (3, False)


def test_the_cut_is_an_option_that_keeps_the_written_summary(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    long = " ".join(f"word{i}" for i in range(30))
    result = run(
        "deductive-rule-learning",
        rwr_31,
        options={"reask_long_summary": "true", "cut_long_summary": "true"},
        replies=REPLIES | {RuleExtraction: summaries(long, long)},
    )
    stage_one = [r for r in result.reasoner.requests if r.call.output_schema is RuleExtraction]
    assert len(stage_one) == 2
    details = result.answer.details
    assert details["rule_summary"].split() == long.split()[:20]
    assert (details["summary_words"], details["summary_over_limit"]) == (30, True)
    assert details["rule_extraction"]["written"] == long
    cut_only = run(
        "deductive-rule-learning",
        rwr_31,
        options={"cut_long_summary": "true"},
        replies=REPLIES | {RuleExtraction: summaries(long)},
    )
    assert len(cut_only.reasoner.requests) == 3  # no re-ask
    assert cut_only.answer.details["rule_summary"].split() == long.split()[:20]


def test_the_re_ask_and_the_cut_are_departures_off_by_default() -> None:
    info = get_strategy("deductive-rule-learning")
    assert dict(info.departures()) == {
        "reask_long_summary": "true re-asks once when the summary runs over 20 words",
        "cut_long_summary": "true cuts a summary over 20 words to its first 20",
    }
    defaults = info.parse_options({})
    assert (defaults.reask_long_summary, defaults.cut_long_summary) == (False, False)
    assert "re-ask" not in info.calls and "kept as written" in info.calls


def test_rules_from_an_earlier_run_skip_stage_one(rwr_31: BongardProblem, run: StrategyRunner) -> None:
    earlier = Reused({"summary": "the figure is a triangle", "rule": "r"}, "run-1", "openai:gpt-4o")
    result = run("deductive-rule-learning", rwr_31, reused={"rules_from": earlier})
    assert all(r.call.output_schema is QueryVerdict for r in result.reasoner.requests)
    assert len(result.reasoner.requests) == 2
    assert all("the figure is a triangle" in str(r.messages[0].content) for r in result.reasoner.requests)
    extraction = result.answer.details["rule_extraction"]
    assert (extraction["from_run"], extraction["by"]) == ("run-1", "openai:gpt-4o")


def test_componential_analysis_describes_each_image_alone_then_reasons_over_text(
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    result = run("componential-analysis", rwr_31)
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
    rwr_31: BongardProblem, run: StrategyRunner
) -> None:
    first = run("componential-analysis", rwr_31)
    stored = first.answer.details["descriptions"]
    earlier = Reused(stored, "run-1", "scripted:describer")
    result = run("componential-analysis", rwr_31, reused={"descriptions_from": earlier})
    assert result.describer.requests == [] and len(result.reasoner.requests) == 2
    assert result.answer.details["describer"] == "scripted:describer"
    assert result.answer.details["descriptions"]["from_run"] == "run-1"
    partial = Reused({**stored, "panels": {"left-0": stored["panels"]["left-0"]}}, "run-2", "x")
    with pytest.raises(StrategyError, match="run-2 has no description of bongard-rwr/31"):
        run("componential-analysis", rwr_31, reused={"descriptions_from": partial})


def test_query_strategies_refuse_problems_without_query_images(
    shared_data: Path, run: StrategyRunner
) -> None:
    classic = open_dataset("bongard-classic", shared_data).problem("6")
    with pytest.raises(StrategyError, match="holdout_test=true"):
        run("direct-rule-learning", classic)


def test_an_openworld_record_gives_a_positive_and_a_negative_query_with_its_category(
    data_dir: Path, run: StrategyRunner
) -> None:
    root = data_dir / "bongard-openworld"
    write_records(root, "test", [make_record(root, "ow-7", common_sense="3")])
    record = open_dataset("bongard-openworld", data_dir).problem("ow-7")
    result = run("deductive-rule-learning", record)
    assert_queries_scored(result.answer)
    assert result.answer.details["category"] == "Color / Material / Shape"
    assert sorted(r.images[0][0] for r in result.reasoner.requests[1:]) == QUERIES
