"""The cognitive paradigms (Vaishnav & Tammet, Sec. 5, App. A.5): three ways to classify a query image.

direct-rule-learning: the 12 context images and the query in one call.
deductive-rule-learning: the rule from the context (a summary of at most 20
words), then the summary and the query image alone. componential-analysis: a
structured description of every image, each in its own context, then a
text-only call over the labelled descriptions. Stage-1 results are kept in the
answer, so `-S rules_from=RUN` and `-S descriptions_from=RUN` let another
agent's rules or descriptions be used (the rule-based ablation, Sec. 7.1, and
the describer x reasoner table).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START
from langgraph.types import Send
from pydantic import BaseModel

from agents.call import ImageSource
from agents.prompt_library import prompt_family
from datasets_io.problem import BongardProblem
from graphs.nodes import (
    Graph,
    SolveRuntime,
    SolveState,
    call_agent,
    fan_out_graph,
    graph_of,
    panel_by_ref,
    panel_source,
    problem_of,
    runtime_of,
    user_message,
)
from graphs.queries import (
    QueryConclusion,
    QueryVerdict,
    collect_queries,
    prepare_queries,
    query_note,
    query_sends,
)
from graphs.registry import DatasetContext, Reused, StrategyError, flag_option, strategy

PARADIGMS = "Vaishnav & Tammet (cognitive paradigms)"
FAMILY = prompt_family("paradigms", "graphs")
SUMMARY_WORDS = 20


def _counts(problem: BongardProblem) -> dict[str, int]:
    return {"positives": len(problem.left), "negatives": len(problem.right)}


def _context_images(runtime: SolveRuntime, problem: BongardProblem) -> list[ImageSource]:
    """Positives, then negatives, each as its own image."""
    return [panel_source(runtime, problem, panel) for panel in problem.context_panels]


# --- direct visual rule learning -----------------------------------------------------------------


def _prepare_direct(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    return {**prepare_queries(problem, context, seed, options), "cot": flag_option(options, "cot", True)}


async def _direct_query(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    query = panel_by_ref(problem, state["inputs"]["query"])
    images = [*_context_images(runtime, problem), panel_source(runtime, problem, query)]
    cot = state["inputs"]["cot"]
    prompt = "direct_rule_learning" if cot else "direct_rule_learning_no_cot"
    reply, trace = await call_agent(
        runtime,
        "reasoner",
        [user_message(runtime.prompts.fill(FAMILY, prompt, total=len(images), **_counts(problem)), images)],
        task="classify",
        images=images,
        conversation=f"query {query.ref}",
        step=0,
        schema=QueryVerdict if cot else QueryConclusion,
        extra={"test_panels": [query.ref]},
    )
    return {"notes": [query_note(query.ref, reply)], "trace": [trace]}


@strategy(
    "direct-rule-learning",
    family=FAMILY,
    paper=PARADIGMS,
    section="Sec. 5.1, App. A.5.1; App. A.6.3 without chain of thought",
    roles=("reasoner",),
    calls="1 call per query: the 12 context images and the query image -> analysis, rule, query, conclusion",
    prepare=_prepare_direct,
    needs_test_panels=True,
    options={"cot": "false asks for the conclusion alone (the chain-of-thought ablation; default true)"},
)
def direct_rule_learning() -> Graph:
    return fan_out_graph(
        query_sends("classify"), ("classify", _direct_query), collect_queries("direct-rule-learning")
    )


# --- deductive rule learning ---------------------------------------------------------------------


class RuleExtraction(BaseModel):
    analysis: str
    rule: str
    summary: str
    """At most 20 words: all the rule-application stage sees."""


def word_count(text: str) -> int:
    return len(text.split())


def _prepare_deductive(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    inputs = prepare_queries(problem, context, seed, options)
    reused = options.get("rules_from")
    if isinstance(reused, Reused):
        rule = dict(reused.value)
        inputs["rule"] = {"from_run": reused.run, "by": reused.agent, **rule}  # the first author stays
    return inputs


async def _extract_rule(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """Stage 1: the rule of the positives, re-asked once if its summary runs over 20 words."""
    if "rule" in state["inputs"]:
        return {}  # taken from an earlier run
    runtime, problem = runtime_of(config), problem_of(state)
    images = _context_images(runtime, problem)
    text = runtime.prompts.fill(FAMILY, "rule_extraction", total=len(images), **_counts(problem))
    messages: list[BaseMessage] = [user_message(text, images)]
    traces = []
    for step in range(2):
        reply, trace = await call_agent(
            runtime, "reasoner", messages, task="answer", images=images, conversation="rule", step=step,
            schema=RuleExtraction, extra={"retry": step > 0},
        )  # fmt: skip
        traces.append(trace)
        summary = str((reply.parsed or {}).get("summary") or reply.text)
        if word_count(summary) <= SUMMARY_WORDS or step == 1:
            break
        words = word_count(summary)
        messages += [
            AIMessage(content=reply.text),
            user_message(runtime.prompts.fill(FAMILY, "rule_extraction_shorter", words=words)),
        ]
    rule = {
        "summary": " ".join(summary.split()[:SUMMARY_WORDS]),
        "rule": str((reply.parsed or {}).get("rule", "")),
        "over_limit": word_count(summary) > SUMMARY_WORDS,
        "parse_error": reply.parse_error,
    }
    return {"notes": [{"kind": "rule", "side": "rule", **rule}], "trace": traces}


def _stage_rule(state: SolveState) -> dict[str, Any]:
    if "rule" in state["inputs"]:
        rule: dict[str, Any] = state["inputs"]["rule"]
        return rule
    return next(
        {k: v for k, v in note.items() if k not in ("kind", "side")}
        for note in state.get("notes", [])
        if note["kind"] == "rule"
    )


async def _apply_rule(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """Stage 2: the summary and the query image, nothing else."""
    runtime, problem = runtime_of(config), problem_of(state)
    query = panel_by_ref(problem, state["inputs"]["query"])
    summary = _stage_rule(state)["summary"]
    images = [panel_source(runtime, problem, query)]
    text = runtime.prompts.fill(FAMILY, "rule_application", summary=summary, **_counts(problem))
    reply, trace = await call_agent(
        runtime,
        "reasoner",
        [user_message(text, images)],
        task="classify",
        images=images,
        conversation=f"query {query.ref}",
        step=0,
        schema=QueryVerdict,
        extra={"rule_summary": summary, "test_panels": [query.ref]},
    )
    return {"notes": [query_note(query.ref, reply)], "trace": [trace]}


def _rule_details(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    rule = _stage_rule(state)
    return {"rule_summary": rule["summary"], "rule_extraction": rule}


@strategy(
    "deductive-rule-learning",
    family=FAMILY,
    paper=PARADIGMS,
    section="Sec. 5.2, App. A.5.2; Sec. 7.1 with -S rules_from=RUN",
    roles=("reasoner",),
    calls="1 rule call with the 12 context images (+1 re-ask if the summary exceeds 20 words), "
    "then 1 call per query: the summary and the query image only",
    prepare=_prepare_deductive,
    needs_test_panels=True,
    options={"rules_from": "a run whose stage-1 rule summaries are applied instead of extracting new ones"},
    reuses={"rules_from": ("rule_extraction", "reasoner")},
)
def deductive_rule_learning() -> Graph:
    return fan_out_graph(
        query_sends("apply"),
        ("apply", _apply_rule),
        collect_queries("deductive-rule-learning", _rule_details),
        before=("extract", _extract_rule),
    )


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


def _prepare_componential(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    inputs = prepare_queries(problem, context, seed, options)
    reused = options.get("descriptions_from")
    if isinstance(reused, Reused):
        panels = dict(reused.value["panels"])
        missing = [p.ref for p in problem.all_panels if p.ref not in panels]
        if missing:
            raise StrategyError(f"run {reused.run} has no description of {problem.key} {', '.join(missing)}")
        inputs["descriptions"] = {**reused.value, "from_run": reused.run}
    return inputs


def _describe_sends(state: SolveState) -> list[Send]:
    if "descriptions" in state["inputs"]:
        return query_sends("reason")(state)  # described by an earlier run
    problem = problem_of(state)
    refs = [p.ref for p in problem.context_panels] + list(state["inputs"]["queries"])
    return [Send("describe", {**state, "inputs": {**state["inputs"], "panel": ref}}) for ref in refs]


async def _describe(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    panel = panel_by_ref(problem, state["inputs"]["panel"])
    image = panel_source(runtime, problem, panel)
    reply, trace = await call_agent(
        runtime,
        "describer",
        [user_message(runtime.prompts.fill(FAMILY, "describe_image"), [image])],
        task="describe",
        images=[image],
        conversation=f"image {panel.ref}",
        step=0,
        schema=ImageDescription,
    )
    description = reply.parsed if reply.parsed is not None else {"unparsed_reply": reply.text}
    note = {"kind": "description", "side": "description", "ref": panel.ref, "description": description}
    return {"notes": [note], "trace": [trace]}


def _descriptions(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    if "descriptions" in state["inputs"]:
        found: dict[str, Any] = state["inputs"]["descriptions"]
        return found
    notes = [n for n in state.get("notes", []) if n["kind"] == "description"]
    return {
        "describer": runtime_of(config).agent("describer").spec,
        "panels": {n["ref"]: n["description"] for n in sorted(notes, key=lambda n: n["ref"])},
    }


def _listing(panels: dict[str, Any], refs: list[str]) -> str:
    return "\n".join(
        f"{number}. {json.dumps(panels[ref], ensure_ascii=False)}" for number, ref in enumerate(refs, 1)
    )


async def _reason(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """Stage 2, text only: the labelled descriptions -> the rule and the query's class."""
    runtime, problem = runtime_of(config), problem_of(state)
    ref = state["inputs"]["query"]
    panels = _descriptions(state, config)["panels"]
    text = runtime.prompts.fill(
        FAMILY,
        "reason_over_descriptions",
        positive_descriptions=_listing(panels, [p.ref for p in problem.left]),
        negative_descriptions=_listing(panels, [p.ref for p in problem.right]),
        query_description=json.dumps(panels[ref], ensure_ascii=False),
        **_counts(problem),
    )
    reply, trace = await call_agent(
        runtime,
        "reasoner",
        [user_message(text)],
        task="classify",
        images=[],
        conversation=f"query {ref}",
        step=0,
        schema=QueryVerdict,
        extra={"test_panels": [ref]},
    )
    return {"notes": [query_note(ref, reply)], "trace": [trace]}


async def _described(state: SolveState) -> dict[str, Any]:
    """Where the description branches join before the reasoning calls start."""
    return {}


def _componential_details(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    descriptions = _descriptions(state, config)
    return {"descriptions": descriptions, "describer": descriptions["describer"]}


@strategy(
    "componential-analysis",
    family=FAMILY,
    paper=PARADIGMS,
    section="Sec. 5.3, App. A.5.3; describer x reasoner with -S descriptions_from=RUN",
    roles=("describer", "reasoner"),
    calls="1 structured description call per context and query image, each in its own context, "
    "then 1 text-only call per query over the labelled descriptions",
    prepare=_prepare_componential,
    needs_test_panels=True,
    options={"descriptions_from": "a run whose stage-1 descriptions are reasoned over instead of new ones"},
    reuses={"descriptions_from": ("descriptions", "describer")},
)
def componential_analysis() -> Graph:
    graph = graph_of(
        ("describe", _describe),
        ("described", _described),
        ("reason", _reason),
        ("finish", collect_queries("componential-analysis", _componential_details)),
    )
    graph.add_conditional_edges(START, _describe_sends, ["describe", "reason"])
    graph.add_edge("describe", "described")
    graph.add_conditional_edges("described", query_sends("reason"), ["reason"])
    graph.add_edge("reason", "finish")
    graph.add_edge("finish", END)
    return graph.compile()
