"""The binary settings of the Bongard case study (Sec. 3.3, Fig. 3, App. I.3).

ground-truth and incorrect-label (is this solution correct?) and
images-to-sides (which side does each of two test images belong to?).
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from datasets_io.problem import BongardProblem, Concept
from graphs.answer import Answer
from graphs.case_study import CASE
from graphs.nodes import (
    CASE_STUDY,
    Graph,
    SolveState,
    call_agent,
    linear_graph,
    needs_concept,
    panel_by_ref,
    panel_source,
    problem_of,
    runtime_of,
    sheet_source,
    side_of_label,
    user_message,
    with_intro,
)
from graphs.registry import DatasetContext, StrategyError, flag_option, seeded_random, strategy

SideLabel = Literal["LEFT", "RIGHT"]
INCORRECT_LABEL_OFFSET = 20


class Verdict(BaseModel):
    verdict: Literal["OK", "WRONG"]


def _verify_node(name: str) -> Any:
    async def verify(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
        runtime, problem = runtime_of(config), problem_of(state)
        proposed = Concept.model_validate(state["inputs"]["proposed"])
        expected = state["inputs"]["expected"]
        sheet = sheet_source(runtime, problem)
        text = with_intro(
            runtime, problem, "verify_solution", left=proposed.left, right=proposed.right or "-"
        )
        reply, trace = await call_agent(
            runtime,
            "reasoner",
            [user_message(text, [sheet])],
            task="judge",
            images=[sheet],
            conversation="verify",
            step=0,
            schema=Verdict,
            extra={"proposed": proposed.model_dump()},
        )
        verdict = reply.parsed["verdict"] if reply.parsed else None
        answer = Answer(
            strategy=name,
            problem=problem.key,
            text=reply.text,
            label=verdict,
            expected={"verdict": expected},
            correct=None if verdict is None else verdict == expected,
            parse_status=reply.parse_status,
            parse_error=reply.parse_error,
        )
        return {"trace": [trace], "answer": answer.model_dump(mode="json", exclude={"trace"})}

    return verify


def _prepare_ground_truth(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    return {"proposed": needs_concept(problem).model_dump(), "expected": "OK"}


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


def _prepare_incorrect_label(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    return {"proposed": incorrect_concept(problem, context).model_dump(), "expected": "WRONG"}


@strategy(
    "ground-truth",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.3, Fig. 3b, Prompt 8",
    roles=("reasoner",),
    calls="1 call: the sheet and the true concept -> OK / WRONG",
    prepare=_prepare_ground_truth,
)
def ground_truth() -> Graph:
    return linear_graph(("verify", _verify_node("ground-truth")))


@strategy(
    "incorrect-label",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.3, Fig. 3b, Prompt 8",
    roles=("reasoner",),
    calls="1 call: the sheet and the concept of problem (X + 20) mod N -> OK / WRONG",
    prepare=_prepare_incorrect_label,
)
def incorrect_label() -> Graph:
    return linear_graph(("verify", _verify_node("incorrect-label")))


class TestImageSide(BaseModel):
    explanation: str
    concept: str
    answer: SideLabel


class TwoTestImages(BaseModel):
    first: TestImageSide
    second: TestImageSide


def _prepare_images_to_sides(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    if not (problem.test_left and problem.test_right):
        raise StrategyError(
            f"{problem.key} has no test image on each side (for bongard-classic use -O holdout_test=true)"
        )
    order = [problem.test_left[0].ref, problem.test_right[0].ref]
    seeded_random(seed, problem, "images-to-sides").shuffle(order)
    return {"order": order, "retry_same_side": flag_option(options, "retry_same_side", True)}


async def _images_to_sides(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    tests = [panel_by_ref(problem, ref) for ref in state["inputs"]["order"]]
    images = [sheet_source(runtime, problem), *(panel_source(runtime, problem, p) for p in tests)]
    messages: list[BaseMessage] = [user_message(with_intro(runtime, problem, "images_to_sides"), images)]
    reply, trace = await call_agent(
        runtime,
        "reasoner",
        messages,
        task="classify",
        images=images,
        conversation="classify",
        step=0,
        schema=TwoTestImages,
        extra={"test_panels": [p.ref for p in tests]},
    )
    traces = [trace]
    given = _two_sides(reply.parsed)
    if state["inputs"]["retry_same_side"] and given[0] is not None and given[0] == given[1]:
        messages += [
            AIMessage(content=reply.text),
            user_message(runtime.prompts.fill(CASE_STUDY, "images_to_sides_retry")),
        ]
        reply, trace = await call_agent(
            runtime,
            "reasoner",
            messages,
            task="classify",
            images=images,
            conversation="classify",
            step=1,
            schema=TwoTestImages,
            extra={"test_panels": [p.ref for p in tests], "retry": True},
        )
        traces.append(trace)
        given = _two_sides(reply.parsed)
    sides = {panel.ref: side for panel, side in zip(tests, given, strict=True)}
    expected = {panel.ref: panel.side for panel in tests}
    answer = Answer(
        strategy="images-to-sides",
        problem=problem.key,
        text=reply.text,
        sides=sides,
        expected={"sides": expected},
        correct=sides == expected,
        parse_status=reply.parse_status,
        parse_error=reply.parse_error,
    )
    return {"trace": traces, "answer": answer.model_dump(mode="json", exclude={"trace"})}


def _two_sides(
    parsed: dict[str, Any] | None,
) -> tuple[Literal["left", "right"] | None, Literal["left", "right"] | None]:
    if not parsed:
        return None, None
    return side_of_label(parsed["first"]["answer"]), side_of_label(parsed["second"]["answer"])


@strategy(
    "images-to-sides",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.3, Fig. 3c, Prompt 7",
    roles=("reasoner",),
    calls="1 call: the sheet and the two test images in seeded order (+1 re-ask if both get one side)",
    prepare=_prepare_images_to_sides,
    needs_test_panels=True,
    options={"retry_same_side": "re-ask once when both test images get the same side (default true)"},
)
def images_to_sides() -> Graph:
    return linear_graph(("classify", _images_to_sides))
