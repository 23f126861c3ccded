"""The perception agent on the calls of the paradigm and wonderland strategies: every reply valid against
the strategy's own schema, on real classic panels, and the behaviour each call promises."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agents.call import CallSpec, ImageSource, TaskKind
from agents.perception.agent import PerceptionError, perception_reply
from agents.perception.features import perceive
from agents.perception.rules import Condition, Side, candidate_rules, induce_rule
from agents.perception.table import COLUMNS, panel_row
from agents.perception.wording import closest, compact, read_rule
from agents.registry import resolve_agent
from agents.schema_fill import SchemaFillError, fill
from agents.structured import parse_reply
from datasets_io.catalog import open_dataset
from datasets_io.problem import BongardProblem, Panel
from graphs.blocks.queries import QueryConclusion, QueryVerdict
from graphs.strategies.paradigms import ImageDescription, RuleExtraction
from graphs.strategies.rwr_plus import Selection
from graphs.strategies.wonderland import Hypotheses, OptionChoice, ProbeAnswer, SetRules

CONCLUSION = {"left": "positive", "right": "negative"}
M = TypeVar("M", bound=BaseModel)

# --- helpers ----------------------------------------------------------------------------------------------


def classic(shared_data: Path, number: int) -> BongardProblem:
    return open_dataset("bongard-classic", shared_data, {"holdout_test": "true"}).problem(str(number))


def single(panel: Panel) -> ImageSource:
    return ImageSource(path=panel.path, panels=[panel])


def sheet(problem: BongardProblem) -> ImageSource:
    return ImageSource(path=problem.context_panels[0].path, panels=problem.context_panels, layout="sheet")


def ask(schema: type[M], task: TaskKind, images: list[ImageSource], **extra: Any) -> M:
    """The agent's reply to a call with `schema`, parsed and validated as the managed agent does."""
    call = CallSpec(task=task, output_schema=schema, images=images, extra=extra)
    return schema.model_validate(parse_reply(perception_reply(call), schema))


def induced_sentences(problem: BongardProblem) -> dict[Side, str]:
    left = [panel_row(perceive(p.path)) for p in problem.left]
    right = [panel_row(perceive(p.path)) for p in problem.right]
    rule = induce_rule(left, right)
    assert rule is not None
    return rule.sentences()


# --- reading rules back, word overlap and schema filling (units) ------------------------------------------


@pytest.mark.parametrize("column", [c for c in COLUMNS if c.name in ("figures", "holes", "ink", "mean_x")])
@pytest.mark.parametrize("above", [False, True])
@pytest.mark.parametrize("negated", [False, True])
def test_a_conditions_words_read_back_say_the_same(column: Any, above: bool, negated: bool) -> None:
    threshold = 2.5 if column.whole else 0.3175
    condition = Condition(column, above, threshold, margin=0.1)
    said = condition.words(negated)
    rule = read_rule(f"Positive images: {said}.")
    assert rule is not None and rule.side == "left" and len(rule.conditions) == 1
    assert rule.conditions[0].words() == said
    for value in (0.0, 0.3, 0.4, 1.0, 2.0, 3.0, 7.0):
        row = {column.name: value}
        assert rule.matches(row) == (condition.holds(row) != negated)


def test_and_rules_need_every_condition_or_rules_any_and_compact_wording_reads_the_same() -> None:
    figures, ink = COLUMNS[0], next(c for c in COLUMNS if c.name == "ink")
    both = f"{Condition(figures, False, 1.5, 0).words()} and {Condition(ink, True, 0.2, 0).words()}"
    rule = read_rule(compact(both))
    assert rule is not None and rule.side == "left"
    assert (
        rule.side_of({"figures": 1, "ink": 0.3}) == "left"
        and rule.side_of({"figures": 1, "ink": 0.1}) == "right"
    )
    either = read_rule(both.replace(" and ", " or "))
    assert either is not None and either.side == "right"  # the left holds when any one condition does
    assert (
        either.side_of({"figures": 1, "ink": 0.1}) == "left"
        and either.side_of({"figures": 3, "ink": 0.1}) == "right"
    )
    assert compact(both).split()[:3] == ["number", "of", "figures"]
    assert read_rule("Positive images: figures with three corners") is None


def test_word_overlap_ignores_case_stop_words_and_plurals_and_ties_go_to_the_first() -> None:
    assert closest("Figure 1 is a filled triangle.", ["Quadrangles", "Triangles"]) == (1, [[], ["triangle"]])
    assert closest("The panel is empty.", ["circles", "lines"])[0] == 0


def test_the_filler_converts_known_values_and_defaults_the_rest() -> None:
    class Inner(BaseModel):
        note: str
        tags: list[str]

    class Reply(BaseModel):
        choice: Literal[1, 2]
        label: Literal["LEFT", "RIGHT"]
        names: list[str]
        inner: Inner
        count: int

    schema = Reply.model_json_schema()
    known = {"choice": 2, "label": "LEFT", "names": "one", "count": "3"}
    filled = fill(schema, known, "why")
    assert filled == {
        "choice": 2,
        "label": "LEFT",
        "names": ["one"],
        "inner": {"note": "why", "tags": []},
        "count": 3,
    }
    assert Reply.model_validate(filled).choice == 2
    with pytest.raises(SchemaFillError, match="'label'"):
        fill(schema, {k: v for k, v in known.items() if k != "label"}, "")
    with pytest.raises(SchemaFillError, match="'choice'"):
        fill(schema, {**known, "choice": 3}, "")


def test_candidate_rules_are_distinct_best_first_and_start_with_the_induced_rule() -> None:
    def row(figures: float, ink: float) -> dict[str, float]:
        return {c.name: {"figures": figures, "ink": ink}.get(c.name, 0.0) for c in COLUMNS}

    left = [row(1, 0.1 + 0.01 * n) for n in range(5)]
    right = [row(2 + n % 2, 0.3 + 0.01 * n) for n in range(5)]
    rules = candidate_rules(left, right, 6)
    assert rules[0] == induce_rule(left, right) and 1 < len(rules) <= 6
    assert len({r.text() for r in rules}) == len(rules)
    assert [r.exceptions for r in rules] == sorted(r.exceptions for r in rules)
    assert candidate_rules(left, right, 0) == []


# --- the calls, on real panels --------------------------------------------------------------------------


def test_direct_rule_learning_with_thirteen_images_with_and_without_chain_of_thought(
    shared_data: Path,
) -> None:
    problem = open_dataset("bongard-classic", shared_data, {}).problem("6")  # triangles vs quadrangles
    context = [single(p) for p in problem.context_panels]
    sentences = induced_sentences(problem)
    same_concept = classic(shared_data, 10)  # triangles vs quadrangles again: its panels are new queries
    queries = [p.model_copy(update={"role": "test"}) for p in (same_concept.left[0], same_concept.right[0])]
    for query in queries:
        images = [*context, single(query)]
        assert len(images) == 13
        verdict = ask(QueryVerdict, "classify", images, test_panels=[query.ref])
        assert verdict.conclusion == CONCLUSION[query.side]
        assert verdict.rule == f"Left: {sentences['left']}; Right: {sentences['right']}"
        assert verdict.query.startswith("The panel shows 1 figure.")
        assert verdict.analysis.startswith(f"It goes {query.side}, where it leaves the sides more separable")
        assert "The simplest exact rule is Left:" in verdict.analysis
        bare = ask(QueryConclusion, "classify", images, test_panels=[query.ref])
        assert bare.conclusion == verdict.conclusion


@pytest.mark.parametrize("number", [2, 23, 8])  # a size, a count, a position with its "(0 left, 1 right)"
def test_deductive_rule_learning_applies_its_own_stage_one_summary(shared_data: Path, number: int) -> None:
    problem = classic(shared_data, number)
    extraction = ask(RuleExtraction, "answer", [single(p) for p in problem.context_panels], retry=False)
    sentences = induced_sentences(problem)
    assert extraction.summary.startswith("Positive images: ") and len(extraction.summary.split()) <= 20
    assert extraction.rule == f"Left: {sentences['left']}\nRight: {sentences['right']}"
    assert f"{len(problem.context_panels)} context panels" in extraction.analysis
    for query in problem.test_panels:  # held out: the agent sees the summary and this panel only
        verdict = ask(
            QueryVerdict,
            "classify",
            [single(query)],
            rule_summary=extraction.summary,
            test_panels=[query.ref],
        )
        assert verdict.conclusion == CONCLUSION[query.side]
        assert verdict.analysis.startswith("By the given rule, read back in the agent's own wording: ")


def test_a_summary_not_in_the_agents_words_is_refused(shared_data: Path) -> None:
    query = classic(shared_data, 6).test_panels[0]
    with pytest.raises(PerceptionError, match="only rules in its own wording"):
        ask(QueryVerdict, "classify", [single(query)], rule_summary="Triangles.", test_panels=[query.ref])


def test_answer_with_set_rules_gives_both_sides_and_without_a_schema_stays_free_text(
    shared_data: Path,
) -> None:
    problem = classic(shared_data, 3)
    rules = ask(SetRules, "answer", [sheet(problem)])
    assert rules.set_a_rule == "the number of filled figures is at most 0"
    assert rules.set_b_rule == "the number of filled figures is at least 1"
    assert perception_reply(CallSpec(task="answer", images=[sheet(problem)])).startswith("Left: the number")


def test_componential_description_of_a_context_and_a_test_panel(shared_data: Path) -> None:
    problem = classic(shared_data, 6)
    for panel in (problem.left[0], problem.test_panels[0]):
        description = ask(ImageDescription, "describe", [single(panel)])
        assert description.dominant_colors == ["black", "white"] and "line drawings" in description.scene
        assert description.living_beings == [] == description.activities
        assert description.weather == "not applicable" == description.time_of_day
        assert len(description.inanimate_objects) == len(perceive(panel.path).figures) == 1
        assert description.summary.startswith("The panel shows 1 figure.")
    plain = perception_reply(CallSpec(task="describe", images=[single(problem.left[0])]))
    assert plain.startswith("The panel shows 1 figure.") and "perception-features:" in plain


def test_the_probe_picks_the_concept_sharing_a_word_with_its_description(shared_data: Path) -> None:
    triangle = classic(shared_data, 6).test_left[0]  # described as "a medium-sized filled triangle"
    for concepts, expected in ((["Triangles", "Quadrangles"], 1), (["Quadrangles", "Triangles"], 2)):
        answer = ask(ProbeAnswer, "probe", [single(triangle)], concepts=concepts)
        assert answer.concept == expected
        assert answer.reasoning.startswith("A guess by word overlap") and "(triangle)" in answer.reasoning


def test_multiple_choice_picks_the_true_concept_among_distractors(shared_data: Path) -> None:
    problem = classic(shared_data, 6)
    others = [classic(shared_data, n).concept for n in (1, 15, 16, 30)]  # no word shared with its rule
    concepts = [*others[:2], problem.concept, *others[2:]]
    options = [{"id": n, "left": c.left, "right": c.right or ""} for n, c in enumerate(concepts, 1) if c]
    choice = ask(OptionChoice, "select", [sheet(problem)], options=options)
    assert choice.option == 3 and choice.analysis.startswith("A guess by word overlap")
    # Bongard-RWR+'s concept selection numbers its candidates by `label` (every item failed before)
    candidates = [{"label": o["id"], "left": o["left"], "right": o["right"]} for o in options]
    selected = ask(Selection, "select", [sheet(problem)], candidates=candidates)
    assert selected.label == 3 and selected.explanation.startswith("A guess by word overlap")


def test_hypotheses_are_distinct_at_most_n_and_the_induced_rule_first(shared_data: Path) -> None:
    problem = classic(shared_data, 3)
    sentences = induced_sentences(problem)
    for count in (5, None):
        extra = {} if count is None else {"count": count}
        listed = ask(Hypotheses, "hypothesize", [sheet(problem)], **extra).hypotheses
        pairs = [(h.set_a_rule, h.set_b_rule) for h in listed]
        assert 1 < len(pairs) <= (count or 20) and len(set(pairs)) == len(pairs)
        assert pairs[0] == (sentences["left"], sentences["right"])


@pytest.mark.parametrize("task", ["generate", "judge", "chat"])
def test_tasks_it_cannot_do_are_refused_clearly(shared_data: Path, task: TaskKind) -> None:
    with pytest.raises(PerceptionError, match=f"cannot do '{task}' calls"):
        perception_reply(CallSpec(task=task, images=[sheet(classic(shared_data, 3))]))


def test_the_managed_agent_validates_a_probe_reply(shared_data: Path, tmp_path: Path) -> None:
    triangle = classic(shared_data, 6).test_left[0]
    call = CallSpec(
        task="probe",
        output_schema=ProbeAnswer,
        images=[single(triangle)],
        extra={"concepts": ["Triangles", "Lines"]},
    )
    agent = resolve_agent("perception", home=tmp_path)
    reply = asyncio.run(agent.acall([HumanMessage(content="Which concept fits?")], call))
    assert reply.parse_status == "ok" and reply.parsed is not None and reply.parsed["concept"] == 1
