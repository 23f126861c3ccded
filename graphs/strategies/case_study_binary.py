"""The binary settings of the Bongard case study (Sec. 3.3, Fig. 3, App. I.3).

ground-truth and incorrect-label (is this solution correct?) and
images-to-sides (which side does each of two test images belong to?).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, Field

from agents.call import AgentReply
from datasets_io.problem import BongardProblem, Concept, Panel, Side
from graphs.answer import AnswerParts
from graphs.blocks.sides import RWR_PLUS, RWR_PLUS_DECODING, RWR_PLUS_FORMATS, RWR_PLUS_PROMPTS, SideLabel
from graphs.blocks.turns import Dialogue, Question, Turn, TurnsState, dialogues_graph
from graphs.nodes import (
    CASE,
    CASE_STUDY,
    Ctx,
    Item,
    SolveState,
    ask,
    label_answer,
    linear_graph,
    needs_concept,
    panel_sources,
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
    pick_protocol,
    seeded_random,
)

INCORRECT_LABEL_OFFSET = 20


class Verdict(BaseModel):
    verdict: Literal["OK", "WRONG"]


class ConceptText(TypedDict):
    left: str
    right: str


class ProposedSolution(TypedDict):
    """The concept shown to the model and the verdict a correct model gives it."""

    proposed: ConceptText
    expected: Literal["OK", "WRONG"]


def _text(concept: Concept) -> ConceptText:
    return {"left": concept.left, "right": concept.stated_right}


async def _verify(state: SolveState, runtime: Ctx[ProposedSolution]) -> SolveState:
    item = runtime.context
    proposed, expected = item.inputs["proposed"], item.inputs["expected"]
    text = item.prompts.fill(CASE_STUDY, "verify_solution", left=proposed["left"], right=proposed["right"])
    reply = await ask(
        item,
        "reasoner",
        text,
        [sheet_source(item)],
        task="judge",
        conversation="verify",
        schema=Verdict,
        extra={"proposed": dict(proposed)},
    )
    return {"answer": label_answer(reply, "verdict", expected, expected_as="verdict")}


def _prepare_ground_truth(given: Preparation[StrategyOptions]) -> ProposedSolution:
    return {"proposed": _text(needs_concept(given.problem)), "expected": "OK"}


def incorrect_concept(problem: BongardProblem, context: DatasetContext) -> Concept:
    """The concept of the problem 20 places on, in dataset order, skipping any equal to this one."""
    concepts = list(context.concepts)
    own = needs_concept(problem)
    ids = [problem_id for problem_id, _ in concepts]
    if problem.id not in ids:
        raise StrategyError(f"{problem.key} is not in the dataset context")
    start = ids.index(problem.id)
    for step in range(INCORRECT_LABEL_OFFSET, INCORRECT_LABEL_OFFSET + len(concepts)):
        _, candidate = concepts[(start + step) % len(concepts)]
        if (candidate.left, candidate.right) != (own.left, own.right):
            return candidate
    raise StrategyError(f"no other concept in the dataset differs from that of {problem.key}")


def _prepare_incorrect_label(given: Preparation[StrategyOptions]) -> ProposedSolution:
    return {"proposed": _text(incorrect_concept(given.problem, given.dataset)), "expected": "WRONG"}


binary_setting = family_strategy(
    family=CASE_STUDY,
    paper=CASE,
    roles=("reasoner",),
)
"""The case study's binary settings (Sec. 3.3): one paper, one reasoner."""


@binary_setting(
    "ground-truth",
    section="Sec. 3.3, Fig. 3b, Prompt 8",
    calls="1 call: the sheet and the true concept -> OK / WRONG",
    count=lambda shape: 1,
    images="1 call with the sheet: all 12 panels in one 1024-px-wide image, 3 rows x 2 per side, a separator",
    contexts="1 call in its own context",
    attempts="not stated: 1 run; Fig. 4 and Table 4 count the problems given the expected verdict",
    scoring="exact: solved when the verdict on the true concept is OK (Sec. 3.3)",
    prepare=_prepare_ground_truth,
)
def ground_truth() -> Graph:
    return linear_graph(SolveState, ("verify", _verify))


@binary_setting(
    "incorrect-label",
    section="Sec. 3.3, Fig. 3b, Prompt 8",
    calls="1 call: the sheet and the concept of problem (X + 20) mod N -> OK / WRONG",
    count=lambda shape: 1,
    images="1 call with the sheet: all 12 panels in one 1024-px-wide image, 3 rows x 2 per side, a separator",
    contexts="1 call in its own context",
    attempts="not stated: 1 run; Fig. 4 and Table 4 count the problems given the expected verdict",
    scoring="exact: solved when the verdict on the concept of problem (X + 20) mod 100 is WRONG (Sec. 3.3)",
    prepare=_prepare_incorrect_label,
)
def incorrect_label() -> Graph:
    return linear_graph(SolveState, ("verify", _verify))


class TestImageSide(BaseModel):
    explanation: str
    concept: str
    answer: SideLabel


class TwoTestImages(BaseModel):
    first: TestImageSide
    second: TestImageSide


class RwrPlusTestImageSide(BaseModel):
    explanation: str
    answer: SideLabel


class RwrPlusTwoTestImages(BaseModel):
    """Bongard-RWR+ Prompt 10's reply: one concept, then each test image's explanation and side."""

    concept: str
    first: RwrPlusTestImageSide
    second: RwrPlusTestImageSide


I2S_PROTOCOLS = (
    PaperProtocol("case-study", CASE, "Sec. 3.3, Fig. 3c, Prompt 7"),
    PaperProtocol("rwr-plus", RWR_PLUS, "Sec. 3.2 (I2S), Prompts 9-10", RWR_PLUS_DECODING, RWR_PLUS_FORMATS),
)
"""The case study's Images to Sides (its synthetic BPs, HOI, OpenWorld) and Bongard-RWR+'s I2S."""


class ImagesToSidesOptions(ProtocolOption):
    retry_same_side: bool = Field(
        default=False,
        description="re-ask once when both test images get the same side, as Bongard-RWR+'s public code "
        "does; no paper text does (the case study counts a same-side answer wrong)",
        json_schema_extra={"departure": "true re-asks once when both test images get one side"},
    )


class TestOrder(TypedDict):
    order: list[str]
    """The two test panel refs in the seeded order they are shown."""
    retry_same_side: bool
    protocol: str
    """The paper protocol followed: its prompts and its reply form."""


def _prepare_images_to_sides(given: Preparation[ImagesToSidesOptions]) -> TestOrder:
    problem = given.problem
    if not (problem.test_left and problem.test_right):
        raise StrategyError(
            f"{problem.key} has no test image on each side (for bongard-classic use -O holdout_test=true)"
        )
    order = [problem.test_left[0].ref, problem.test_right[0].ref]
    seeded_random(given.seed, problem, "images-to-sides").shuffle(order)
    protocol = pick_protocol(I2S_PROTOCOLS, given.options.protocol, problem.dataset).name
    return {"order": order, "retry_same_side": given.options.retry_same_side, "protocol": protocol}


def _tests(item: Item[TestOrder]) -> list[Panel]:
    return [item.panel(ref) for ref in item.inputs["order"]]


def _classify_script(item: Item[TestOrder], finished: list[Turn]) -> Question | None:
    """The sheet and both test images; with -S retry_same_side, one re-ask in the same conversation
    when both went to one side."""
    tests = _tests(item)
    extra = {"test_panels": [p.ref for p in tests], "opposite_sides": True}
    rwr_plus = item.inputs["protocol"] == "rwr-plus"
    schema: type[BaseModel] = RwrPlusTwoTestImages if rwr_plus else TwoTestImages
    if not finished:
        images = [sheet_source(item), *panel_sources(item, tests)]
        prompt = item.prompts.fill(RWR_PLUS_PROMPTS if rwr_plus else CASE_STUDY, "images_to_sides")
        return Question(prompt, "classify", images, schema, extra)
    first, second = _two_sides(finished[0]["parsed"])
    if len(finished) == 1 and item.inputs["retry_same_side"] and first is not None and first == second:
        retry = item.prompts.fill(CASE_STUDY, "images_to_sides_retry")
        return Question(retry, "classify", schema=schema, extra={**extra, "retry": True})
    return None


def _sides_answer(item: Item[TestOrder], reply: AgentReply) -> SolveState:
    return {"answer": sides_answer(_tests(item), _two_sides(reply.parsed), reply)}


def sides_answer(tests: Sequence[Panel], given: Sequence[Side | None], reply: AgentReply) -> AnswerParts:
    """Images to Sides' scoring: solved only when each test image is on its true side (a study's
    participants are scored by it too)."""
    sides = {panel.ref: side for panel, side in zip(tests, given, strict=True)}
    expected = {panel.ref: panel.side for panel in tests}
    return AnswerParts(
        text=reply.text,
        sides=sides,
        expected={"sides": expected},
        correct=sides == expected,
        parse_status=reply.parse_status,
        parse_error=reply.parse_error,
    )


CLASSIFY = Dialogue("classify", "reasoner", _classify_script, _sides_answer)


def _two_sides(parsed: dict[str, Any] | None) -> tuple[Side | None, Side | None]:
    if not parsed:
        return None, None
    return side_of_label(parsed["first"]["answer"]), side_of_label(parsed["second"]["answer"])


@binary_setting(
    "images-to-sides",
    section="Sec. 3.3, Fig. 3c, Prompt 7",
    protocols=I2S_PROTOCOLS,
    calls="1 call: the sheet and the two test images in seeded order (-S retry_same_side=true: +1 re-ask "
    "if both get one side)",
    count=lambda shape: 1,
    images="1 call, 3 images: the sheet + the 2 test images shuffled (synthetic BPs: each side's 6th "
    "panel held out)",
    contexts="1 call in its own context (the -S retry_same_side re-ask continues it)",
    attempts="not stated: 1 run; case study: Fig. 4 and Table 4 count the problems solved; rwr-plus: "
    "at temperature 0.5 (Sec. 4), accuracy over the test images (Table 2)",
    scoring="exact: solved only when both test images go to their true sides (App. C; Bongard-RWR+'s "
    "accuracy over test images is the run's image accuracy); "
    "one side for both is wrong",
    prepare=_prepare_images_to_sides,
    needs_test_panels=True,
    options=ImagesToSidesOptions,
)
def images_to_sides() -> Graph:
    return dialogues_graph(TurnsState, [CLASSIFY])
