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
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.call import ImageSource
from datasets_io.problem import BongardProblem
from graphs.answer import AnswerParts
from graphs.blocks.describe_first import (
    DescribedState,
    DescribeInputs,
    Describer,
    as_text,
    describe_first,
    describe_inputs,
    described_details,
    descriptions_of,
)
from graphs.blocks.sides import (
    RWR_PLUS,
    RWR_PLUS_DECODING,
    RWR_PLUS_PROMPTS,
    SideLabel,
    SidesInputs,
    SidesState,
    each_test,
    side_result,
    sides_answer,
)
from graphs.nodes import Ctx, Item, ask, free_answer, sheet_source, side_of_label
from graphs.registry import (
    Graph,
    Preparation,
    StrategyError,
    StrategyOptions,
    family_strategy,
    seeded_random,
)

FAMILY = RWR_PLUS_PROMPTS
DESCRIBER = Describer(FAMILY)
REUSES = {"descriptions_from": ("descriptions", "describer")}


class ReuseOptions(StrategyOptions):
    descriptions_from: str | None = Field(
        default=None, description="a run whose panel descriptions are used instead of describing again"
    )


def _texts(item: Item[DescribeInputs], state: DescribedState) -> dict[str, str]:
    """The panel descriptions by ref, as text."""
    return {ref: as_text(found) for ref, found in descriptions_of(item, state)["panels"].items()}


def _side_texts(problem: BongardProblem, panels: dict[str, str]) -> dict[str, list[str]]:
    return {"left": [panels[p.ref] for p in problem.left], "right": [panels[p.ref] for p in problem.right]}


def _context_refs(problem: BongardProblem) -> list[str]:
    return [p.ref for p in problem.context_panels]


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


class DescribedSidesInputs(SidesInputs, DescribeInputs):
    pass


class DescribedSidesState(SidesState, DescribedState, total=False):
    pass


def _prepare_sides(given: Preparation[ReuseOptions]) -> DescribedSidesInputs:
    problem = given.problem
    tests = [p.ref for p in problem.test_panels]
    return {"tests": tests, **describe_inputs(given, _context_refs(problem) + tests, text=True)}


def _request(problem: BongardProblem, panels: dict[str, str], **tests: str) -> str:
    """The JSON request of the D1S / D2S prompts: the side descriptions and the test ones."""
    sides = _side_texts(problem, panels)
    request = {"left_descriptions": sides["left"], "right_descriptions": sides["right"], **tests}
    return json.dumps(request, ensure_ascii=False)


def _classify_extra(problem: BongardProblem, panels: dict[str, str], tests: list[str]) -> dict[str, Any]:
    """What a non-LLM classifier needs: the test refs and every description by side."""
    texts = {**_side_texts(problem, panels), "tests": {ref: panels[ref] for ref in tests}}
    return {"test_panels": tests, "descriptions": texts}


async def _one_description(
    state: DescribedSidesState, runtime: Ctx[DescribedSidesInputs]
) -> DescribedSidesState:
    item, ref = runtime.context, state["test"]
    panels = _texts(item, state)
    request = _request(item.problem, panels, test_description=panels[ref])
    reply = await ask(
        item,
        "reasoner",
        item.prompts.fill(FAMILY, "description_to_side", request=request),
        task="classify",
        conversation=f"test {ref}",
        schema=OneDescription,
        extra=_classify_extra(item.problem, panels, [ref]),
    )
    side = side_of_label(reply.parsed["answer"]) if reply.parsed else None
    return {"sides": [side_result(ref, reply, side, (reply.parsed or {}).get("concept", ""))]}


async def _sides_answer(
    state: DescribedSidesState, runtime: Ctx[DescribedSidesInputs]
) -> DescribedSidesState:
    """Stage-1 descriptions and, per test, the concept it was classified by and its description."""
    item = runtime.context
    panels = _texts(item, state)
    queries = {
        found["ref"]: {"rule": found["concept"], "query": panels[found["ref"]]} for found in state["sides"]
    }
    return {"answer": sides_answer(item, state, **described_details(item, state), queries=queries)}


description_task = family_strategy(
    family=FAMILY,
    paper=RWR_PLUS,
    decoding=RWR_PLUS_DECODING,
    roles=("describer", "reasoner"),
    reuses=REUSES,
)
"""Bongard-RWR+'s tasks over descriptions: one paper, its decoding, a describer's descriptions reused."""


@description_task(
    "description-to-side",
    section="Sec. 3.2 (D1S), Prompts 5, 7-8",
    calls="1 description call per context and test panel, each in its own context, then 1 text-only call "
    "per test description -> its side",
    count=lambda shape: shape.context + 2 * shape.tests,
    images="describer: 1 panel per call (12 context + each test panel); "
    "side call: none, descriptions as JSON",
    contexts="none shared: each panel described afresh; each test description classified afresh",
    attempts="not stated: 1 run at temperature 0.5 (Sec. 4); accuracy over all test descriptions (Table 2)",
    scoring="per test description accuracy, chance 0.5 (Table 2, Fig. 7; App. C.9 counts 200 per concept)",
    options=ReuseOptions,
    prepare=_prepare_sides,
    needs_test_panels=True,
)
def description_to_side() -> Graph:
    return describe_first(
        DescribedSidesState, DESCRIBER, ("classify", _one_description), each_test("classify"), _sides_answer
    )


def _prepare_two(given: Preparation[ReuseOptions]) -> DescribedSidesInputs:
    problem = given.problem
    if not (problem.test_left and problem.test_right):
        raise StrategyError(f"{problem.key} has no test image on each side")
    inputs = _prepare_sides(given)
    order = [problem.test_left[0].ref, problem.test_right[0].ref]
    seeded_random(given.seed, problem, "descriptions-to-sides").shuffle(order)
    return {**inputs, "tests": order}


async def _two_descriptions(
    state: DescribedSidesState, runtime: Ctx[DescribedSidesInputs]
) -> DescribedSidesState:
    item = runtime.context
    first, second = item.inputs["tests"]
    panels = _texts(item, state)
    request = _request(item.problem, panels, first=panels[first], second=panels[second])
    reply = await ask(
        item,
        "reasoner",
        item.prompts.fill(FAMILY, "descriptions_to_sides", request=request),
        task="classify",
        conversation="classify",
        schema=TwoDescriptions,
        extra={**_classify_extra(item.problem, panels, [first, second]), "opposite_sides": True},
    )
    parsed = reply.parsed or {}
    concept = parsed.get("concept", "")
    results = [
        side_result(ref, reply, side_of_label(parsed[key]["answer"]) if parsed else None, concept)
        for ref, key in ((first, "first"), (second, "second"))
    ]
    return {"sides": results}


@description_task(
    "descriptions-to-sides",
    section="Sec. 3.2 (D2S), Prompts 9, 11-12",
    calls="1 description call per context and test panel, each in its own context, then 1 text-only call "
    "with both test descriptions in a seeded order -> a side for each",
    count=lambda shape: shape.context + shape.tests + 1,
    images="describer: 1 panel per call (12 context + 2 test panels); "
    "side call: none, all descriptions as JSON",
    contexts="none shared: each panel described afresh; the one side call afresh",
    attempts="not stated: 1 run at temperature 0.5 (Sec. 4); accuracy over all test descriptions (Table 2)",
    scoring="accuracy over both test descriptions, chance 0.5; one side for both is not prevented (Sec. 4)",
    options=ReuseOptions,
    prepare=_prepare_two,
    needs_test_panels=True,
)
def descriptions_to_sides() -> Graph:
    return describe_first(
        DescribedSidesState, DESCRIBER, ("classify", _two_descriptions), None, _sides_answer
    )


# --- CG ----------------------------------------------------------------------------------------------


class ConceptPair(BaseModel):
    explanation: str
    left_concept: str
    right_concept: str


class GenerationOptions(ReuseOptions):
    input: Literal["images", "descriptions"] = Field(
        default="images",
        description="what the reasoner is shown: input=images or input=descriptions, "
        "that is the sheet or the context panels' descriptions",
    )


class GenerationInputs(DescribeInputs):
    input: Literal["images", "descriptions"]


def _prepare_generation(given: Preparation[GenerationOptions]) -> GenerationInputs:
    source = given.options.input
    if source == "images" and given.options.descriptions_from is not None:
        raise StrategyError("descriptions_from needs -S input=descriptions")
    refs = _context_refs(given.problem) if source == "descriptions" else []
    return {"input": source, **describe_inputs(given, refs, text=True)}


def concept_answer(parsed: dict[str, Any] | None, fallback: AnswerParts) -> AnswerParts:
    """The concept pair as `Left:` / `Right:` lines, for the judges and the text metrics."""
    if parsed is None:
        return fallback
    left, right = parsed["left_concept"], parsed["right_concept"]
    return AnswerParts(
        text=f"Left: {left}\nRight: {right}",
        left_rule=left,
        right_rule=right,
        parse_status="ok",
        details={"explanation": parsed.get("explanation", "")},
    )


async def _generate(state: DescribedState, runtime: Ctx[GenerationInputs]) -> DescribedState:
    item = runtime.context
    images: list[ImageSource] = []
    if item.inputs["input"] == "images":
        text = item.prompts.fill(FAMILY, "concept_generation", per_side=item.problem.panels_per_side)
        images = [sheet_source(item)]
    else:
        sides = _side_texts(item.problem, _texts(item, state))
        listed = {
            side: "\n".join(f"{n}. {t}" for n, t in enumerate(texts, 1)) for side, texts in sides.items()
        }
        text = item.prompts.fill(
            FAMILY,
            "concept_generation_from_descriptions",
            left_descriptions=listed["left"],
            right_descriptions=listed["right"],
        )
    reply = await ask(
        item, "reasoner", text, images, task="answer", conversation="generate", schema=ConceptPair
    )
    answer = concept_answer(reply.parsed, free_answer(reply))
    if item.inputs["input"] == "descriptions":
        answer.details |= described_details(item, state)
    return {"answer": answer}


@description_task(
    "concept-generation",
    section="Sec. 3.2 (CG), App. C.6",
    calls="1 call: the sheet -> the left and right concepts; with -S input=descriptions, 1 description call "
    "per context panel first and an image-free concept call (scored with text metrics; may be judged)",
    count=lambda shape: shape.context + 1 if shape.options.input == "descriptions" else 1,
    images="images: 1 call with the sheet; "
    "descriptions: 1 panel per describer call, then a concept call with none",
    contexts="none shared: every call afresh",
    attempts="not stated: 1 run at temperature 0.5 (Sec. 4); metric scores over all problems "
    "(App. C.6, Tables 6-9)",
    scoring="free-form: BLEU, METEOR, ROUGE-L, CIDEr, BERTScore against the true concept (App. C.6; "
    "`bongard analyze metrics`); the paper uses no judge, here judges may be added as for any free-form "
    "answer",
    options=GenerationOptions,
    prepare=_prepare_generation,
    judged=True,
)
def concept_generation() -> Graph:
    return describe_first(DescribedState, DESCRIBER, ("generate", _generate))
