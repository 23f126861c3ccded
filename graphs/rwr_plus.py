"""Bongard-RWR+ task settings (Pawlonka, Małkiński, Mańdziuk, ICLR 2026; Sec. 3.2, App. F).

image-to-side (I1S): one test image at a time -> its side; concept-selection
(CS): K candidate concept pairs -> the label of the true one.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from agents.call import AgentReply
from datasets_io.problem import BongardProblem, Side
from graphs.answer import Answer
from graphs.case_study_binary import SideLabel
from graphs.nodes import (
    CASE_STUDY,
    Graph,
    SolveState,
    call_agent,
    fan_out_graph,
    label_answer,
    linear_graph,
    needs_concept,
    panel_by_ref,
    panel_source,
    problem_of,
    runtime_of,
    send_each,
    sheet_source,
    side_of_label,
    user_message,
)
from graphs.queries import StageDetails
from graphs.registry import DatasetContext, StrategyError, seeded_random, strategy

RWR_PLUS = "Pawlonka et al., ICLR 2026 (Bongard-RWR+)"
CONCEPT_COUNTS = (2, 4, 8, 16)


class OneTestImage(BaseModel):
    concept: str
    explanation: str
    answer: SideLabel


def _prepare_image_to_side(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    if not problem.test_panels:
        raise StrategyError(
            f"{problem.key} has no test images (for bongard-classic use -O holdout_test=true)"
        )
    return {"tests": [panel.ref for panel in problem.test_panels]}


async def _classify_one(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    panel = panel_by_ref(problem, state["inputs"]["test"])
    images = [sheet_source(runtime, problem), panel_source(runtime, problem, panel)]
    reply, trace = await call_agent(
        runtime,
        "reasoner",
        [user_message(runtime.prompts.fill(CASE_STUDY, "image_to_side"), images)],
        task="classify",
        images=images,
        conversation=f"test {panel.ref}",
        step=0,
        schema=OneTestImage,
        extra={"test_panels": [panel.ref]},
    )
    side = side_of_label(reply.parsed["answer"]) if reply.parsed else None
    return {"notes": [side_note(panel.ref, reply, side)], "trace": [trace]}


def side_note(ref: str, reply: AgentReply, given: Side | None) -> dict[str, Any]:
    """One test input's side as a note for `collect_sides`."""
    return {
        "kind": "side",
        "side": "test",
        "ref": ref,
        "given": given,
        "text": reply.text,
        "parse_error": reply.parse_error,
    }


def collect_sides(strategy: str, details: StageDetails | None = None) -> Any:
    """The finishing node: the side given to each test input against its true side."""

    async def collect(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
        problem = problem_of(state)
        notes = sorted((n for n in state.get("notes", []) if n["kind"] == "side"), key=lambda n: n["ref"])
        sides = {n["ref"]: n["given"] for n in notes}
        expected = {ref: panel_by_ref(problem, ref).side for ref in sides}
        errors = [n["parse_error"] for n in notes if n["parse_error"]]
        answer = Answer(
            strategy=strategy,
            problem=problem.key,
            text="\n".join(n["text"] for n in notes),
            sides=sides,
            expected={"sides": expected},
            correct=sides == expected,
            parse_status="failed" if errors else "ok",
            parse_error="; ".join(errors) or None,
            details=details(state, config) if details else {},
        )
        return {"answer": answer.model_dump(mode="json", exclude={"trace"})}

    return collect


@strategy(
    "image-to-side",
    family=CASE_STUDY,
    paper=RWR_PLUS,
    section="Sec. 3.2 (I1S), Prompts 5-6",
    roles=("reasoner",),
    calls="1 call per test image, each in its own context: the sheet and that test image",
    prepare=_prepare_image_to_side,
    needs_test_panels=True,
)
def image_to_side() -> Graph:
    return fan_out_graph(
        send_each("classify", "tests", "test"), ("classify", _classify_one), collect_sides("image-to-side")
    )


class Selection(BaseModel):
    explanation: str
    label: int


def _prepare_concept_selection(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    count = int(options.get("concepts", 4))
    if count not in CONCEPT_COUNTS:
        raise StrategyError(f"concept-selection takes concepts in {CONCEPT_COUNTS}, not {count}")
    own = needs_concept(problem)
    pool = context.other_concepts(own)
    if len(pool) < count - 1:
        raise StrategyError(f"the dataset has {len(pool)} other distinct concepts; {count - 1} are needed")
    rng = seeded_random(seed, problem, "concept-selection")
    candidates = [own, *rng.sample(pool, count - 1)]
    rng.shuffle(candidates)
    listed = [{"left": c.left, "right": c.right, "label": n} for n, c in enumerate(candidates, 1)]
    return {"candidates": listed, "label": candidates.index(own) + 1}


async def _select(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    sheet = sheet_source(runtime, problem)
    candidates = json.dumps({"concepts": state["inputs"]["candidates"]}, ensure_ascii=False)
    text = runtime.prompts.fill(CASE_STUDY, "concept_selection", candidates=candidates)
    reply, trace = await call_agent(
        runtime,
        "reasoner",
        [user_message(text, [sheet])],
        task="select",
        images=[sheet],
        conversation="select",
        step=0,
        schema=Selection,
        extra={"candidates": state["inputs"]["candidates"]},
    )
    answer = label_answer("concept-selection", problem, reply, "label", state["inputs"]["label"])
    return {"trace": [trace], "answer": answer}


@strategy(
    "concept-selection",
    family=CASE_STUDY,
    paper=RWR_PLUS,
    section="Sec. 3.2 (CS), App. F Prompt 4",
    roles=("reasoner",),
    calls="1 call: the sheet and K candidate concept pairs -> a label",
    prepare=_prepare_concept_selection,
    options={"concepts": "K, the number of candidates: 2, 4, 8 or 16 (default 4)"},
)
def concept_selection() -> Graph:
    return linear_graph(("select", _select))
