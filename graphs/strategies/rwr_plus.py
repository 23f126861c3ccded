"""Bongard-RWR+ task settings (Pawlonka, Małkiński, Mańdziuk, ICLR 2026; Sec. 3.2, App. F).

image-to-side (I1S): one test image at a time -> its side; concept-selection
(CS): K candidate concept pairs -> the label of the true one.
"""

from __future__ import annotations

import json
import random
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, BeforeValidator, Field

from datasets_io.problem import BongardProblem, Concept
from graphs.blocks.sides import (
    RWR_PLUS,
    RWR_PLUS_DECODING,
    RWR_PLUS_FORMATS,
    SideLabel,
    SidesInputs,
    SidesState,
    answer_sides,
    each_test,
    side_result,
)
from graphs.nodes import (
    CASE,
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
    PaperProtocol,
    Preparation,
    ProtocolOption,
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
        item,
        "reasoner",
        item.prompts.fill(CASE_STUDY, "image_to_side"),
        [sheet_source(item), panel_source(item, panel)],
        task="classify",
        conversation=f"test {panel.ref}",
        schema=OneTestImage,
        extra={"test_panels": [panel.ref]},
    )
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
    images="1 call per test image, 2 images: the sheet (12 panels in one image) + that test image "
    "(Prompts 5-6)",
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


CS_PROTOCOLS = (
    PaperProtocol("case-study", CASE, "Sec. 4 (concept selection), App. C, Table 3"),
    PaperProtocol("rwr-plus", RWR_PLUS, "Sec. 3.2 (CS), Prompt 4", RWR_PLUS_DECODING, RWR_PLUS_FORMATS),
)
"""The case study's concept selection (each API's defaults; the prompt is not published, so Prompt
4's form serves both) and Bongard-RWR+'s CS at temperature 0.5."""


class ConceptSelectionOptions(ProtocolOption):
    concepts: Annotated[Literal[2, 4, 8, 16], BeforeValidator(_number)] = Field(
        default=4,
        description="K, the number of candidates shown: the true concept and K-1 other concepts in a "
        "shuffled list; 2, 4, 8 or 16",
    )
    distractors: Literal["subsequent", "subsequent-filled", "random"] = Field(
        default="subsequent",
        description="how the K-1 other concepts are chosen. subsequent (the authors' code): the rows of the "
        "dataset's concept table after this problem's, wrapping around, each taken only if it shares no "
        "word with the true concept nor with one already taken; a K it cannot fill is refused. "
        "subsequent-filled: the same, then topped up with rows sharing no word with the true concept "
        "only. random: a seeded draw from all other distinct concepts",
        json_schema_extra={
            "departure": "subsequent-filled tops up past the authors' rule; random draws the other concepts "
            "at random, words shared or not"
        },
    )


class Candidate(TypedDict):
    left: str
    right: str
    label: int


class Candidates(TypedDict):
    candidates: list[Candidate]
    label: int
    """The true concept's label."""


def rule_words(concept: Concept) -> frozenset[str]:
    """The words the Bongard-RWR+ code compares two concepts by: both rules joined by a space, every
    upper-case "NOT " dropped, split on single spaces, lower-cased (an empty word, from a double
    space, counts too). Two concepts clash when they share any word: the authors' longest common
    word subsequence is then above 0."""
    joined = f"{concept.left} {concept.stated_right}".replace("NOT ", "")
    return frozenset(word.lower() for word in joined.split(" "))


def subsequent_distractors(
    problem: BongardProblem, dataset: DatasetContext, count: int, *, filled: bool = False
) -> list[Concept]:
    """`count` distractors for `problem`, in the order taken, by the rule of the authors' code.

    The case study takes distractors from the problems that follow, semantically different from
    the answer (Sec. 5); the Bongard-RWR+ code (`get_negative_concept_indices`) walks every row of
    `labels.csv` from the one after the problem's, wrapping around, and takes a row only if it
    shares no word (`rule_words`) with the true concept nor with a row already taken. It raises
    when the walk comes back to the problem's row unfilled (for row 0 its loop never ends); here
    that is a refusal, or with `filled` a second walk that tops up with rows sharing no word with
    the true concept only (a departure the run records as its option).
    """
    table = dataset.label_table()
    row = table.row_of.get(problem.id)
    if row is None:
        raise StrategyError(f"{problem.key} has no row in the concept table {table.source}")
    own = table.rows[row]
    walk = [table.rows[n] for n in (*range(row + 1, len(table.rows)), *range(row))]
    taken: list[Concept] = []
    blocked = set(rule_words(own))
    for concept in walk:
        if len(taken) < count and not rule_words(concept) & blocked:
            taken.append(concept)
            blocked |= rule_words(concept)
    found = len(taken)
    for concept in walk if filled else ():
        fresh = concept != own and concept not in taken
        if len(taken) < count and fresh and not rule_words(concept) & rule_words(own):
            taken.append(concept)
    if len(taken) < count:
        raise StrategyError(
            f"the authors' rule finds {found} of the {count} distractors K={count + 1} needs for "
            f"{problem.key} in {table.source} (-S distractors=subsequent-filled tops them up, "
            "-S distractors=random draws them)"
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
        count, filled = given.options.concepts - 1, given.options.distractors == "subsequent-filled"
        distractors = subsequent_distractors(problem, given.dataset, count, filled=filled)
    candidates = [own, *distractors]
    rng.shuffle(candidates)
    listed: list[Candidate] = [
        {"left": c.left, "right": c.stated_right, "label": n} for n, c in enumerate(candidates, 1)
    ]
    return {"candidates": listed, "label": candidates.index(own) + 1}


async def _select(state: SolveState, runtime: Ctx[Candidates]) -> SolveState:
    item = runtime.context
    candidates = item.inputs["candidates"]
    listed = json.dumps({"concepts": candidates}, ensure_ascii=False)
    reply = await ask(
        item,
        "reasoner",
        item.prompts.fill(CASE_STUDY, "concept_selection", candidates=listed),
        [sheet_source(item)],
        task="select",
        conversation="select",
        schema=Selection,
        extra={"candidates": candidates},
    )
    return {"answer": label_answer(reply, "label", item.inputs["label"])}


@rwr_plus_task(
    "concept-selection",
    section="Sec. 3.2 (CS), App. F Prompt 4",
    calls="1 call: the sheet and K candidate concept pairs -> a label",
    count=lambda shape: 1,
    images="1 call: the sheet (12 panels in one image) + K candidate concept pairs as JSON text (Prompt 4)",
    contexts="1 call in its own context",
    attempts="not stated: 1 run (rwr-plus at temperature 0.5, Sec. 4); accuracy per K over all problems "
    "(case study Table 3, Bongard-RWR+ Fig. 5)",
    scoring="exact: the chosen label must be the true concept's; accuracy per K in {2, 4, 8, 16} (Sec. 4)",
    options=ConceptSelectionOptions,
    prepare=_prepare_concept_selection,
    reads_label_table=True,
    protocols=CS_PROTOCOLS,
)
def concept_selection() -> Graph:
    return linear_graph(SolveState, ("select", _select))
