"""Bongard-RWR+ task settings (Pawlonka, Małkiński, Mańdziuk, ICLR 2026; Sec. 3.2, App. F).

image-to-side (I1S): one test image at a time -> its side; concept-selection
(CS): K candidate concept pairs -> the label of the true one.
"""

from __future__ import annotations

import json
import random
import re
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, BeforeValidator, Field

from datasets_io.problem import BongardProblem, Concept
from graphs.blocks.sides import (
    RWR_PLUS,
    RWR_PLUS_DECODING,
    SideLabel,
    SidesInputs,
    SidesState,
    answer_sides,
    each_test,
    side_result,
)
from graphs.nodes import (
    CASE_STUDY,
    Ctx,
    SolveState,
    ask,
    fan_out_graph,
    label_answer,
    linear_graph,
    needs_concept,
    panel_source,
    sheet_source,
    side_of_label,
)
from graphs.registry import (
    DatasetContext,
    Graph,
    Preparation,
    StrategyError,
    StrategyOptions,
    family_strategy,
    seeded_random,
)


class OneTestImage(BaseModel):
    concept: str
    explanation: str
    answer: SideLabel


def _prepare_image_to_side(given: Preparation[StrategyOptions]) -> SidesInputs:
    problem = given.problem
    if not problem.test_panels:
        raise StrategyError(
            f"{problem.key} has no test images (for bongard-classic use -O holdout_test=true)"
        )
    return {"tests": [panel.ref for panel in problem.test_panels]}


async def _classify_one(state: SidesState, runtime: Ctx) -> SidesState:
    item = runtime.context
    panel = item.panel(state["test"])
    reply = await ask(
        item, "reasoner", item.prompts.fill(CASE_STUDY, "image_to_side"),
        [sheet_source(item), panel_source(item, panel)], task="classify", conversation=f"test {panel.ref}",
        schema=OneTestImage, extra={"test_panels": [panel.ref]},
    )  # fmt: skip
    side = side_of_label(reply.parsed["answer"]) if reply.parsed else None
    return {"sides": [side_result(panel.ref, reply, side)]}


rwr_plus_task = family_strategy(
    family=CASE_STUDY,
    paper=RWR_PLUS,
    decoding=RWR_PLUS_DECODING,
    roles=("reasoner",),
)
"""Bongard-RWR+'s image tasks: one paper, its decoding, one reasoner."""


@rwr_plus_task(
    "image-to-side",
    section="Sec. 3.2 (I1S), Prompts 5-6",
    calls="1 call per test image, each in its own context: the sheet and that test image",
    count=lambda shape: shape.tests,
    images="1 call per test image: the sheet (12 panels in one image) + that test image (Prompts 5-6)",
    contexts="none shared: each test image classified afresh (each is its own instance, App. C.9)",
    attempts="not stated: 1 run at temperature 0.5 (Sec. 4); accuracy over all test images (Table 2)",
    scoring="per test image accuracy, chance 0.5 (Table 2; App. C.9 counts 200 instances per concept)",
    prepare=_prepare_image_to_side,
    needs_test_panels=True,
)
def image_to_side() -> Graph:
    return fan_out_graph(SidesState, each_test("classify"), ("classify", _classify_one), answer_sides)


class Selection(BaseModel):
    explanation: str
    label: int


def _number(value: object) -> object:
    """`-S concepts=8` arrives as the string "8"."""
    return int(value) if isinstance(value, str) and value.strip().isdigit() else value


class ConceptSelectionOptions(StrategyOptions):
    concepts: Annotated[Literal[2, 4, 8, 16], BeforeValidator(_number)] = Field(
        default=4,
        description="K, the number of candidates shown: the true concept and K-1 other concepts in a "
        "shuffled list; 2, 4, 8 or 16",
    )
    distractors: Literal["subsequent", "random"] = Field(
        default="subsequent",
        description="how the K-1 other concepts are chosen. subsequent (the papers' rule): those after this "
        "problem in dataset order, wrapping around, sharing no word with the true concept nor (while "
        "there are enough) with one already taken; random: a seeded draw from all other distinct concepts",
        json_schema_extra={"departure": "random draws the other concepts at random, words shared or not"},
    )


class Candidate(TypedDict):
    left: str
    right: str | None
    label: int


class Candidates(TypedDict):
    candidates: list[Candidate]
    label: int
    """The true concept's label."""


def _concept_words(concept: Concept) -> frozenset[str]:
    """The words that make two concepts look alike, lower-cased. "not" is left out: it marks a side
    as the negation of the other and says nothing of the topic, so it would tie unrelated pairs."""
    text = f"{concept.left} {concept.right or ''}".lower()
    return frozenset(re.findall(r"\w+", text)) - {"not"}


def subsequent_distractors(problem: BongardProblem, dataset: DatasetContext, count: int) -> list[Concept]:
    """`count` distractors for `problem`, in the order taken, by the rule of the papers' code.

    The case study takes distractors "from subsequent matrices, ensuring they were semantically
    different" (Sec. 5); the Bongard-RWR+ code reads that as: walk the concepts from the problem
    after this one, wrapping around, and take one only if it shares no word with the true concept
    nor with any distractor already taken. Bongard-RWR's 60 concepts hold only 9 to 13 such
    mutually disjoint ones per problem, too few for K = 16, so a second walk tops the list up with
    concepts that share no word with the true one only: no candidate can then be read as a
    rewording of the answer, which is what the rule is for.
    """
    rows = list(dataset.concepts)
    ids = [problem_id for problem_id, _ in rows]
    if problem.id not in ids:
        raise StrategyError(f"{problem.key} is not in the dataset context")
    start = ids.index(problem.id)
    walk = [rows[(start + step) % len(rows)][1] for step in range(1, len(rows))]
    own = needs_concept(problem)
    own_words = _concept_words(own)
    taken: list[Concept] = []

    def admits(concept: Concept, blocked: set[str]) -> bool:
        fresh = concept != own and concept not in taken
        return len(taken) < count and fresh and not _concept_words(concept) & blocked

    blocked = set(own_words)
    for concept in walk:
        if admits(concept, blocked):
            taken.append(concept)
            blocked |= _concept_words(concept)
    for concept in walk:
        if admits(concept, set(own_words)):
            taken.append(concept)
    if len(taken) < count:
        raise StrategyError(
            f"the dataset has {len(taken)} other concepts sharing no word with that of {problem.key}; "
            f"{count} are needed (-S distractors=random draws from all of them)"
        )
    return taken


def _random_distractors(given: Preparation[ConceptSelectionOptions], rng: random.Random) -> list[Concept]:
    count, own = given.options.concepts - 1, needs_concept(given.problem)
    pool = given.dataset.other_concepts(own)
    if len(pool) < count:
        raise StrategyError(f"the dataset has {len(pool)} other distinct concepts; {count} are needed")
    return rng.sample(pool, count)


def _prepare_concept_selection(given: Preparation[ConceptSelectionOptions]) -> Candidates:
    problem, own = given.problem, needs_concept(given.problem)
    rng = seeded_random(given.seed, problem, "concept-selection")
    if given.options.distractors == "random":
        distractors = _random_distractors(given, rng)
    else:
        distractors = subsequent_distractors(problem, given.dataset, given.options.concepts - 1)
    candidates = [own, *distractors]
    rng.shuffle(candidates)
    listed: list[Candidate] = [
        {"left": c.left, "right": c.right, "label": n} for n, c in enumerate(candidates, 1)
    ]
    return {"candidates": listed, "label": candidates.index(own) + 1}


async def _select(state: SolveState, runtime: Ctx[Candidates]) -> SolveState:
    item = runtime.context
    candidates = item.inputs["candidates"]
    listed = json.dumps({"concepts": candidates}, ensure_ascii=False)
    reply = await ask(
        item, "reasoner", item.prompts.fill(CASE_STUDY, "concept_selection", candidates=listed),
        [sheet_source(item)], task="select", conversation="select", schema=Selection,
        extra={"candidates": candidates},
    )  # fmt: skip
    return {"answer": label_answer(reply, "label", item.inputs["label"])}


@rwr_plus_task(
    "concept-selection",
    section="Sec. 3.2 (CS), App. F Prompt 4",
    calls="1 call: the sheet and K candidate concept pairs -> a label",
    count=lambda shape: 1,
    images="1 call: the sheet (12 panels in one image) + K candidate concept pairs as JSON text (Prompt 4)",
    contexts="1 call in its own context",
    attempts="not stated: 1 run at temperature 0.5 (Sec. 4); accuracy per K over all problems (Fig. 5)",
    scoring="exact: the chosen label must be the true concept's; accuracy per K in {2, 4, 8, 16} (Sec. 4)",
    options=ConceptSelectionOptions,
    prepare=_prepare_concept_selection,
)
def concept_selection() -> Graph:
    return linear_graph(SolveState, ("select", _select))
