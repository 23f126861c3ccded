"""Bongard-RWR+ tasks over descriptions (Pawlonka et al., ICLR 2026, Sec. 3.2, App. C.6, Prompts 5-12).

description-to-side (D1S) and descriptions-to-sides (D2S): a describer (an
image-to-text model) writes one description per panel, each panel in its own
context, and a reasoner (any text model) classifies the test descriptions
from the side descriptions, without images. concept-generation (CG): the
concept pair in free form, from the sheet or from the descriptions; it is
scored with text metrics (`bongard analyze metrics`) and may be judged.
Descriptions are kept in the answer, so `-S descriptions_from=RUN` lets any
reasoner work on one describer's descriptions (the describer x reasoner table,
`bongard analyze describers`); componential-analysis descriptions serve too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START
from langgraph.types import Send
from pydantic import BaseModel

from agents.prompt_library import prompt_family
from datasets_io.problem import BongardProblem
from graphs.answer import Answer
from graphs.case_study_binary import SideLabel
from graphs.nodes import (
    Graph,
    SolveState,
    call_agent,
    free_answer,
    graph_of,
    panel_by_ref,
    panel_source,
    problem_of,
    runtime_of,
    send_each,
    sheet_source,
    side_of_label,
    user_message,
)
from graphs.registry import DatasetContext, Reused, StrategyError, seeded_random, strategy
from graphs.rwr_plus import RWR_PLUS, collect_sides, side_note

FAMILY = prompt_family("rwr_plus", "graphs")
REUSES = {"descriptions_from": ("descriptions", "describer")}
REUSE_OPTION = {"descriptions_from": "a run whose panel descriptions are used instead of describing again"}


# --- stage 1: one description per panel -----------------------------------------------------------


def _as_text(description: Any) -> str:
    """A description as text: free text as it is, a structured (componential) one as JSON."""
    return description if isinstance(description, str) else json.dumps(description, ensure_ascii=False)


def _reused_descriptions(problem: BongardProblem, refs: list[str], options: dict[str, Any]) -> dict[str, Any]:
    reused = options.get("descriptions_from")
    if not isinstance(reused, Reused):
        return {}
    panels = dict(reused.value["panels"])
    missing = [ref for ref in refs if ref not in panels]
    if missing:
        raise StrategyError(f"run {reused.run} has no description of {problem.key} {', '.join(missing)}")
    texts = {ref: _as_text(panels[ref]) for ref in refs}
    return {"descriptions": {"describer": reused.value["describer"], "panels": texts, "from_run": reused.run}}


def _described_refs(problem: BongardProblem, with_tests: bool) -> list[str]:
    return [p.ref for p in problem.context_panels] + (
        [p.ref for p in problem.test_panels] if with_tests else []
    )


def _describe_sends(after: str) -> Callable[[SolveState], list[Send] | str]:
    """Describe every panel the task needs, each in its own context, unless an earlier run did
    (or the task works on the images)."""

    def sends(state: SolveState) -> list[Send] | str:
        if "descriptions" in state["inputs"] or not state["inputs"]["described"]:
            return after
        return [
            Send("describe", {**state, "inputs": {**state["inputs"], "panel": ref}})
            for ref in state["inputs"]["described"]
        ]

    return sends


async def _describe(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    panel = panel_by_ref(problem, state["inputs"]["panel"])
    image = panel_source(runtime, problem, panel)
    reply, trace = await call_agent(
        runtime, "describer", [user_message(runtime.prompts.fill(FAMILY, "describe_image"), [image])],
        task="describe", images=[image], conversation=f"image {panel.ref}", step=0,
    )  # fmt: skip
    return {
        "notes": [{"kind": "caption", "side": "caption", "ref": panel.ref, "text": reply.text}],
        "trace": [trace],
    }


def descriptions_of(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """The panel descriptions: taken from an earlier run, or written in this one."""
    if "descriptions" in state["inputs"]:
        found: dict[str, Any] = state["inputs"]["descriptions"]
        return found
    notes = sorted((n for n in state.get("notes", []) if n["kind"] == "caption"), key=lambda n: n["ref"])
    return {
        "describer": runtime_of(config).agent("describer").spec,
        "panels": {n["ref"]: n["text"] for n in notes},
    }


def _side_texts(problem: BongardProblem, panels: dict[str, str]) -> dict[str, list[str]]:
    return {"left": [panels[p.ref] for p in problem.left], "right": [panels[p.ref] for p in problem.right]}


def _stage_details(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    descriptions = descriptions_of(state, config)
    return {"descriptions": descriptions, "describer": descriptions["describer"]}


async def _described(state: SolveState) -> dict[str, Any]:
    """Where the description branches join before the reasoning starts."""
    return {}


def describe_first(
    after: tuple[str, Any], fan_out: Callable[[SolveState], list[Send]] | None, finish: Any
) -> Graph:
    """START -> describe each panel (or nothing, when reused) -> `after` (once, or once per
    `fan_out` Send) -> `finish` -> END."""
    name = after[0]
    graph = graph_of(("describe", _describe), ("described", _described), after, ("finish", finish))
    graph.add_conditional_edges(START, _describe_sends("described"), ["describe", "described"])
    graph.add_edge("describe", "described")
    if fan_out is None:
        graph.add_edge("described", name)
    else:
        graph.add_conditional_edges("described", fan_out, [name])
    graph.add_edge(name, "finish")
    graph.add_edge("finish", END)
    return graph.compile()


# --- D1S and D2S -------------------------------------------------------------------------------------


class OneDescription(BaseModel):
    concept: str
    explanation: str
    answer: SideLabel


class DescriptionSide(BaseModel):
    explanation: str
    answer: SideLabel


class TwoDescriptions(BaseModel):
    concept: str
    first: DescriptionSide
    second: DescriptionSide


def _prepare_sides(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    tests = [p.ref for p in problem.test_panels]
    refs = _described_refs(problem, with_tests=True)
    return {"tests": tests, "described": refs, **_reused_descriptions(problem, refs, options)}


def _request(problem: BongardProblem, panels: dict[str, str], **tests: str) -> str:
    """The JSON request of the D1S / D2S prompts: the side descriptions and the test ones."""
    sides = _side_texts(problem, panels)
    request = {"left_descriptions": sides["left"], "right_descriptions": sides["right"], **tests}
    return json.dumps(request, ensure_ascii=False)


def _classify_extra(problem: BongardProblem, panels: dict[str, str], tests: list[str]) -> dict[str, Any]:
    """What a non-LLM classifier needs: the test refs and every description by side."""
    texts = {**_side_texts(problem, panels), "tests": {ref: panels[ref] for ref in tests}}
    return {"test_panels": tests, "descriptions": texts}


async def _one_description(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    ref = state["inputs"]["test"]
    panels = descriptions_of(state, config)["panels"]
    request = _request(problem, panels, test_description=panels[ref])
    prompt = runtime.prompts.fill(FAMILY, "description_to_side", request=request)
    reply, trace = await call_agent(
        runtime, "reasoner", [user_message(prompt)],
        task="classify", images=[], conversation=f"test {ref}", step=0, schema=OneDescription,
        extra=_classify_extra(problem, panels, [ref]),
    )  # fmt: skip
    side = side_of_label(reply.parsed["answer"]) if reply.parsed else None
    note = side_note(ref, reply, side) | {"concept": (reply.parsed or {}).get("concept", "")}
    return {"notes": [note], "trace": [trace]}


def _query_details(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """Stage-1 descriptions and, per test, the concept it was classified by and its description."""
    panels = descriptions_of(state, config)["panels"]
    notes = [n for n in state.get("notes", []) if n["kind"] == "side"]
    queries = {n["ref"]: {"rule": n.get("concept", ""), "query": panels[n["ref"]]} for n in notes}
    return {**_stage_details(state, config), "queries": queries}


@strategy(
    "description-to-side",
    family=FAMILY,
    paper=RWR_PLUS,
    section="Sec. 3.2 (D1S), Prompts 5, 7-8",
    roles=("describer", "reasoner"),
    calls="1 description call per context and test panel, each in its own context, then 1 text-only call "
    "per test description -> its side",
    prepare=_prepare_sides,
    needs_test_panels=True,
    options=REUSE_OPTION,
    reuses=REUSES,
)
def description_to_side() -> Graph:
    return describe_first(
        ("classify", _one_description),
        send_each("classify", "tests", "test"),
        collect_sides("description-to-side", _query_details),
    )


def _prepare_two(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    if not (problem.test_left and problem.test_right):
        raise StrategyError(f"{problem.key} has no test image on each side")
    inputs = _prepare_sides(problem, context, seed, options)
    order = [problem.test_left[0].ref, problem.test_right[0].ref]
    seeded_random(seed, problem, "descriptions-to-sides").shuffle(order)
    return {**inputs, "tests": order}


async def _two_descriptions(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    first, second = state["inputs"]["tests"]
    panels = descriptions_of(state, config)["panels"]
    request = _request(problem, panels, first=panels[first], second=panels[second])
    prompt = runtime.prompts.fill(FAMILY, "descriptions_to_sides", request=request)
    reply, trace = await call_agent(
        runtime, "reasoner", [user_message(prompt)],
        task="classify", images=[], conversation="classify", step=0, schema=TwoDescriptions,
        extra=_classify_extra(problem, panels, [first, second]),
    )  # fmt: skip
    parsed = reply.parsed or {}
    concept = parsed.get("concept", "")
    notes = [
        side_note(ref, reply, side_of_label(parsed[key]["answer"]) if parsed else None) | {"concept": concept}
        for ref, key in ((first, "first"), (second, "second"))
    ]
    return {"notes": notes, "trace": [trace]}


@strategy(
    "descriptions-to-sides",
    family=FAMILY,
    paper=RWR_PLUS,
    section="Sec. 3.2 (D2S), Prompts 9, 11-12",
    roles=("describer", "reasoner"),
    calls="1 description call per context and test panel, each in its own context, then 1 text-only call "
    "with both test descriptions in a seeded order -> a side for each",
    prepare=_prepare_two,
    needs_test_panels=True,
    options=REUSE_OPTION,
    reuses=REUSES,
)
def descriptions_to_sides() -> Graph:
    return describe_first(
        ("classify", _two_descriptions), None, collect_sides("descriptions-to-sides", _query_details)
    )


# --- CG ----------------------------------------------------------------------------------------------


class ConceptPair(BaseModel):
    explanation: str
    left_concept: str
    right_concept: str


INPUTS = ("images", "descriptions")


def _prepare_generation(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    source = str(options.get("input", "images"))
    if source not in INPUTS:
        raise StrategyError(f"concept-generation takes input=images or input=descriptions, not {source!r}")
    if source == "images" and "descriptions_from" in options:
        raise StrategyError("descriptions_from needs -S input=descriptions")
    refs = _described_refs(problem, with_tests=False) if source == "descriptions" else []
    return {"input": source, "described": refs, **_reused_descriptions(problem, refs, options)}


def concept_answer(problem: BongardProblem, parsed: dict[str, Any] | None, fallback: Any) -> Answer:
    """The concept pair as `Left:` / `Right:` lines, for the judges and the text metrics."""
    if parsed is None:
        return Answer.model_validate(fallback)
    left, right = parsed["left_concept"], parsed["right_concept"]
    return Answer(
        strategy="concept-generation", problem=problem.key, text=f"Left: {left}\nRight: {right}",
        left_rule=left, right_rule=right, parse_status="ok",
        details={"explanation": parsed.get("explanation", "")},
    )  # fmt: skip


async def _generate(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    if state["inputs"]["input"] == "images":
        sheet = sheet_source(runtime, problem)
        text = runtime.prompts.fill(FAMILY, "concept_generation", per_side=problem.panels_per_side)
        images = [sheet]
    else:
        sides = _side_texts(problem, descriptions_of(state, config)["panels"])
        listed = {
            side: "\n".join(f"{n}. {t}" for n, t in enumerate(texts, 1)) for side, texts in sides.items()
        }
        text = runtime.prompts.fill(
            FAMILY, "concept_generation_from_descriptions",
            left_descriptions=listed["left"], right_descriptions=listed["right"],
        )  # fmt: skip
        images = []
    reply, trace = await call_agent(
        runtime, "reasoner", [user_message(text, images)], task="answer", images=images,
        conversation="generate", step=0, schema=ConceptPair,
    )  # fmt: skip
    answer = concept_answer(problem, reply.parsed, free_answer("concept-generation", problem, reply))
    if state["inputs"]["input"] == "descriptions":
        answer.details |= _stage_details(state, config)
    return {"trace": [trace], "answer": answer.model_dump(mode="json", exclude={"trace"})}


async def _generated(state: SolveState) -> dict[str, Any]:
    """The answer is written by the generating node."""
    return {}


@strategy(
    "concept-generation",
    family=FAMILY,
    paper=RWR_PLUS,
    section="Sec. 3.2 (CG), App. C.6",
    roles=("describer", "reasoner"),
    calls="1 call: the sheet -> the left and right concepts; with -S input=descriptions, 1 description call "
    "per context panel first and an image-free concept call (scored with text metrics; may be judged)",
    prepare=_prepare_generation,
    options={
        "input": "images (the sheet; default) or descriptions (the panels' descriptions)",
        **REUSE_OPTION,
    },
    reuses=REUSES,
)
def concept_generation() -> Graph:
    return describe_first(("generate", _generate), None, _generated)
