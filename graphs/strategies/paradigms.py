"""The cognitive paradigms (Vaishnav & Tammet, Sec. 5, App. A.5): three ways to classify a query image.

direct-rule-learning: the 12 context images and the query in one call.
deductive-rule-learning: the rule from the context (a summary asked for in at
most 20 words, kept as written and flagged when longer), then the summary and
the query image alone. componential-analysis: a structured description of
every image, each in its own context, then a text-only call over the labelled
descriptions. Stage-1 results are kept in the answer, so `-S rules_from=RUN`
and `-S descriptions_from=RUN` let another agent's rules or descriptions be
used (the rule-based ablation, Sec. 7.1, and the describer x reasoner table).
"""

from __future__ import annotations

import json
from typing import Any, Required, TypedDict, cast

from langgraph.graph import END, START
from pydantic import BaseModel, Field

from agents.call import AgentReply, ImageSource
from agents.prompt_library import prompt_family
from datasets_io.problem import BongardProblem
from graphs.blocks.describe_first import (
    DescribedState,
    DescribeInputs,
    Describer,
    describe_first,
    describe_inputs,
    described_details,
    descriptions_of,
    notes_extra,
)
from graphs.blocks.queries import (
    QueryConclusion,
    QueryInputs,
    QueryState,
    QueryVerdict,
    answer_queries,
    each_query,
    prepare_queries,
    query_answer,
    query_result,
)
from graphs.blocks.turns import Dialogue, Question, Turn, TurnsState, add_dialogue
from graphs.nodes import Ctx, Item, ask, fan_out_graph, graph_of, panel_source, panel_sources
from graphs.registry import Graph, Preparation, StrategyOptions, family_strategy

PARADIGMS = "Vaishnav & Tammet (cognitive paradigms)"
PARADIGMS_DECODING = {"temperature": 0}
"""App. A.4.2: temperature 0, for deterministic outputs."""
FAMILY = prompt_family("paradigms", "graphs")
SUMMARY_WORDS = 20


def _counts(problem: BongardProblem) -> dict[str, int]:
    return {"positives": len(problem.left), "negatives": len(problem.right)}


def _context_images(item: Item[Any]) -> list[ImageSource]:
    """Positives, then negatives, each as its own image."""
    return panel_sources(item, item.problem.context_panels)


# --- direct visual rule learning -----------------------------------------------------------------


class DirectOptions(StrategyOptions):
    cot: bool = Field(
        default=True,
        description="ask for the analysis and rule before the conclusion; cot takes true or false "
        "(false asks for the conclusion alone: the ablation of App. A.6.3)",
    )


class DirectInputs(QueryInputs):
    cot: bool


def _prepare_direct(given: Preparation[DirectOptions]) -> DirectInputs:
    return {**prepare_queries(given.problem), "cot": given.options.cot}


async def _direct_query(state: QueryState, runtime: Ctx[DirectInputs]) -> QueryState:
    item = runtime.context
    query = item.panel(state["query"])
    images = [*_context_images(item), panel_source(item, query)]
    cot = item.inputs["cot"]
    prompt = "direct_rule_learning" if cot else "direct_rule_learning_no_cot"
    text = item.prompts.fill(FAMILY, prompt, total=len(images), **_counts(item.problem))
    reply = await ask(
        item,
        "reasoner",
        text,
        images,
        task="classify",
        conversation=f"query {query.ref}",
        schema=QueryVerdict if cot else QueryConclusion,
        extra={"test_panels": [query.ref]},
    )
    return {"queries": [query_result(query.ref, reply)]}


paradigm_strategy = family_strategy(
    family=FAMILY,
    paper=PARADIGMS,
    decoding=PARADIGMS_DECODING,
    needs_test_panels=True,
    card={
        "attempts": "not stated: 1 run at temperature 0 (App. A.4.2); "
        "Table 1 pools 500 test cases of 1 query each",
        "scoring": "per query accuracy, overall and for positive / negative queries (App. A.4.3, Table 1)",
    },
)
"""The cognitive paradigms: one paper, its decoding, query images classified, each scored exactly."""


@paradigm_strategy(
    "direct-rule-learning",
    section="Sec. 5.1, App. A.5.1; App. A.6.3 without chain of thought",
    roles=("reasoner",),
    calls="1 call per query: the 12 context images and the query image -> analysis, rule, query, conclusion",
    count=lambda shape: shape.tests,
    images="1 call per query: 13 separate images (11 with panels held out, 5 a side), "
    "the 6 positive and 6 negative context images, then the query image",
    contexts="none shared: each query classified afresh (each is its own test case, App. A.3.1)",
    options=DirectOptions,
    prepare=_prepare_direct,
)
def direct_rule_learning() -> Graph:
    return fan_out_graph(QueryState, each_query("classify"), ("classify", _direct_query), answer_queries)


# --- deductive rule learning ---------------------------------------------------------------------


class RuleExtraction(BaseModel):
    analysis: str
    rule: str
    summary: str
    """Asked for in at most 20 words: all the rule-application stage sees."""


class Rule(TypedDict, total=False):
    """Stage 1's rule as the answer keeps it (`details["rule_extraction"]`) for later runs."""

    summary: Required[str]
    """The summary the queries are given: as the model wrote it, unless `cut_long_summary` cut it."""
    rule: str
    words: int
    """The words of the model's final summary, as written."""
    over_limit: bool
    """The model's final summary runs over 20 words."""
    written: str
    """The model's summary before `cut_long_summary` cut it (only when cut)."""
    parse_error: str | None
    from_run: str
    """Where the rule was taken from an earlier run: that run, and the agent that wrote it."""
    by: str


class DeductiveOptions(StrategyOptions):
    rules_from: str | None = Field(
        default=None,
        description="a run whose stage-1 rule summaries are applied instead of extracting new ones",
    )
    reask_long_summary: bool = Field(
        default=False,
        description="re-ask once, in the rule call's conversation, when the summary runs over 20 words; "
        "the paper keeps the summary as written",
        json_schema_extra={"departure": "true re-asks once when the summary runs over 20 words"},
    )
    cut_long_summary: bool = Field(
        default=False,
        description="cut a summary still over 20 words to its first 20 before the queries see it; "
        "the paper keeps the summary as written",
        json_schema_extra={"departure": "true cuts a summary over 20 words to its first 20"},
    )


class DeductiveInputs(QueryInputs):
    rule: Rule | None
    """The rule of an earlier run (`rules_from`), with which stage 1 is skipped."""
    reask_long_summary: bool
    cut_long_summary: bool


class DeductiveState(QueryState, TurnsState, total=False):
    rule: Rule


def word_count(text: str) -> int:
    return len(text.split())


def _prepare_deductive(given: Preparation[DeductiveOptions]) -> DeductiveInputs:
    reused = given.reused.get("rules_from")
    rule = None
    if reused is not None:
        rule = cast(Rule, {"from_run": reused.run, "by": reused.agent, **dict(reused.value)})  # first author
    return {
        **prepare_queries(given.problem),
        "rule": rule,
        "reask_long_summary": given.options.reask_long_summary,
        "cut_long_summary": given.options.cut_long_summary,
    }


def _summary(reply: str, parsed: dict[str, Any] | None) -> str:
    return str((parsed or {}).get("summary") or reply)


def _rule_script(item: Item[DeductiveInputs], finished: list[Turn]) -> Question | None:
    """Stage 1: the rule of the positives (nothing to ask when it comes from an earlier run); with
    -S reask_long_summary, one re-ask in the same conversation when the summary runs over 20 words."""
    if item.inputs["rule"] is not None:
        return None
    if not finished:
        images = _context_images(item)
        text = item.prompts.fill(FAMILY, "rule_extraction", total=len(images), **_counts(item.problem))
        return Question(text, "answer", images, RuleExtraction, {"retry": False})
    words = word_count(_summary(finished[0]["reply"], finished[0]["parsed"]))
    if len(finished) == 1 and item.inputs["reask_long_summary"] and words > SUMMARY_WORDS:
        shorter = item.prompts.fill(FAMILY, "rule_extraction_shorter", words=words)
        return Question(shorter, "answer", schema=RuleExtraction, extra={"retry": True})
    return None


def _extracted_rule(item: Item[DeductiveInputs], reply: AgentReply) -> DeductiveState:
    """The summary is kept as written, however long (Sec. 5.2, App. A.5.2.1 ask for 20 words and do
    nothing when a model writes more); the re-ask and the cut are options beyond the paper."""
    written = _summary(reply.text, reply.parsed)
    words = word_count(written)
    rule: Rule = {
        "summary": written,
        "rule": str((reply.parsed or {}).get("rule", "")),
        "words": words,
        "over_limit": words > SUMMARY_WORDS,
        "parse_error": reply.parse_error,
    }
    if item.inputs["cut_long_summary"] and words > SUMMARY_WORDS:
        rule |= {"summary": " ".join(written.split()[:SUMMARY_WORDS]), "written": written}
    return {"rule": rule}


RULE = Dialogue("rule", "reasoner", _rule_script, _extracted_rule)


def _stage_rule(item: Item[DeductiveInputs], state: DeductiveState) -> Rule:
    return item.inputs["rule"] or state["rule"]


async def _apply_rule(state: DeductiveState, runtime: Ctx[DeductiveInputs]) -> DeductiveState:
    """Stage 2: the summary and the query image, nothing else."""
    item = runtime.context
    query = item.panel(state["query"])
    summary = _stage_rule(item, state)["summary"]
    text = item.prompts.fill(FAMILY, "rule_application", summary=summary, **_counts(item.problem))
    reply = await ask(
        item,
        "reasoner",
        text,
        [panel_source(item, query)],
        task="classify",
        conversation=f"query {query.ref}",
        schema=QueryVerdict,
        extra={"rule_summary": summary, "test_panels": [query.ref]},
    )
    return {"queries": [query_result(query.ref, reply)]}


async def _deductive_answer(state: DeductiveState, runtime: Ctx[DeductiveInputs]) -> DeductiveState:
    rule = _stage_rule(runtime.context, state)
    words = rule.get("words", word_count(rule["summary"]))  # a rule reused from an older run may lack it
    flags = {"summary_words": words, "summary_over_limit": words > SUMMARY_WORDS}
    return {
        "answer": query_answer(
            runtime.context, state, rule_summary=rule["summary"], rule_extraction=rule, **flags
        )
    }


@paradigm_strategy(
    "deductive-rule-learning",
    section="Sec. 5.2, App. A.5.2; Sec. 7.1 with -S rules_from=RUN",
    roles=("reasoner",),
    calls="1 rule call with the 12 context images (the summary asked for in 20 words, kept as written), "
    "then 1 call per query: the summary and the query image only",
    count=lambda shape: 1 + shape.tests,
    images="rule call: 12 context images, 6 positive then 6 negative (10 with panels held out); "
    "per query: 1 query image + the summary text",
    contexts="rule call afresh (the -S reask_long_summary re-ask continues it); "
    "each query's application call afresh",
    options=DeductiveOptions,
    prepare=_prepare_deductive,
    reuses={"rules_from": ("rule_extraction", "reasoner")},
)
def deductive_rule_learning() -> Graph:
    """START -> the rule conversation, one turn per step -> each query applied -> the answer -> END."""
    graph = graph_of(DeductiveState, ("apply", _apply_rule), ("finish", _deductive_answer))
    add_dialogue(graph, RULE, each_query("apply"), ["apply"])
    graph.add_edge(START, RULE.node)
    graph.add_edge("apply", "finish")
    graph.add_edge("finish", END)
    return graph.compile()


# --- componential analysis -----------------------------------------------------------------------


class ImageDescription(BaseModel):
    """One image as structured data (App. A.5.3.1), so descriptions can be compared as text."""

    scene: str
    living_beings: list[str]
    inanimate_objects: list[str]
    activities: list[str]
    time_of_day: str
    weather: str
    dominant_colors: list[str]
    textures: list[str]
    emotional_tone: str
    visible_text: str
    summary: str


class ComponentialOptions(StrategyOptions):
    descriptions_from: str | None = Field(
        default=None, description="a run whose stage-1 descriptions are reasoned over instead of new ones"
    )


class ComponentialInputs(QueryInputs, DescribeInputs):
    pass


class ComponentialState(QueryState, DescribedState, total=False):
    pass


def _prepare_componential(given: Preparation[ComponentialOptions]) -> ComponentialInputs:
    queries = prepare_queries(given.problem)
    refs = [panel.ref for panel in given.problem.context_panels] + queries["queries"]
    return {**queries, **describe_inputs(given, refs)}


def _listing(panels: dict[str, Any], refs: list[str]) -> str:
    return "\n".join(
        f"{number}. {json.dumps(panels[ref], ensure_ascii=False)}" for number, ref in enumerate(refs, 1)
    )


async def _reason(state: ComponentialState, runtime: Ctx[ComponentialInputs]) -> ComponentialState:
    """Stage 2, text only: the labelled descriptions -> the rule and the query's class."""
    item, ref = runtime.context, state["query"]
    problem = item.problem
    descriptions = descriptions_of(item, state)
    panels = descriptions["panels"]
    text = item.prompts.fill(
        FAMILY,
        "reason_over_descriptions",
        positive_descriptions=_listing(panels, [p.ref for p in problem.left]),
        negative_descriptions=_listing(panels, [p.ref for p in problem.right]),
        query_description=json.dumps(panels[ref], ensure_ascii=False),
        **_counts(problem),
    )
    reply = await ask(
        item,
        "reasoner",
        text,
        task="classify",
        conversation=f"query {ref}",
        schema=QueryVerdict,
        extra={"test_panels": [ref], **notes_extra(descriptions)},
    )
    return {"queries": [query_result(ref, reply)]}


async def _componential_answer(
    state: ComponentialState, runtime: Ctx[ComponentialInputs]
) -> ComponentialState:
    item = runtime.context
    return {"answer": query_answer(item, state, **described_details(item, state))}


@paradigm_strategy(
    "componential-analysis",
    section="Sec. 5.3, App. A.5.3; describer x reasoner with -S descriptions_from=RUN",
    roles=("describer", "reasoner"),
    text_only_roles=("reasoner",),
    notes_from="describer",
    calls="1 structured description call per context and query image, each in its own context, "
    "then 1 text-only call per query over the labelled descriptions",
    count=lambda shape: shape.context + 2 * shape.tests,
    images="describer: 1 image per call (12 context images, each query); reasoning call: none, JSON text",
    contexts="none shared: each image described afresh; each query's reasoning call afresh",
    options=ComponentialOptions,
    prepare=_prepare_componential,
    reuses={"descriptions_from": ("descriptions", "describer")},
)
def componential_analysis() -> Graph:
    return describe_first(
        ComponentialState,
        Describer(FAMILY, ImageDescription),
        ("reason", _reason),
        each_query("reason"),
        _componential_answer,
    )
