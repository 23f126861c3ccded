"""The strategies of the Bongard case study (Małkiński, Pawlonka, Mańdziuk, ICML 2025).

Natural-language strategies (Sec. 3.1, Fig. 2, App. I.4): direct, descriptive,
descriptive-iterative, descriptive-direct, contrastive, contrastive-iterative,
contrastive-direct. Binary settings (Sec. 3.3, App. I.3): ground-truth,
incorrect-label, images-to-sides; and, from Bongard-RWR+ (Sec. 3.2, App. F),
image-to-side and concept-selection.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send
from pydantic import BaseModel

from agents.call import ImageSource
from datasets_io.problem import BongardProblem, Concept, Panel
from graphs.answer import Answer
from graphs.nodes import (
    CASE_STUDY,
    SolveState,
    call_agent,
    free_answer,
    intro,
    panel_source,
    problem_of,
    runtime_of,
    sheet_source,
    user_message,
    with_intro,
)
from graphs.registry import DatasetContext, StrategyError, seeded_random, strategy

CASE = "Małkiński et al., ICML 2025 (Bongard case study)"
RWR_PLUS = "Pawlonka et al., ICLR 2026 (Bongard-RWR+)"
Graph = CompiledStateGraph[Any, Any, Any, Any]
SideLabel = Literal["LEFT", "RIGHT"]
INCORRECT_LABEL_OFFSET = 20
CONCEPT_COUNTS = (2, 4, 8, 16)


def _graph(*nodes: tuple[str, Any]) -> StateGraph[SolveState]:
    graph: StateGraph[SolveState] = StateGraph(SolveState)
    for name, node in nodes:
        graph.add_node(name, node)
    return graph


def _linear(*nodes: tuple[str, Any]) -> Graph:
    graph = _graph(*nodes)
    names = [START, *(name for name, _ in nodes), END]
    for source, target in itertools.pairwise(names):
        graph.add_edge(source, target)
    return graph.compile()


# --- direct -------------------------------------------------------------------------------------


async def _direct(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    sheet = sheet_source(runtime, problem)
    message = user_message(with_intro(runtime, problem, "direct"), [sheet])
    reply, trace = await call_agent(
        runtime, "reasoner", [message], task="answer", images=[sheet], conversation="answer", step=0
    )
    return {"trace": [trace], "answer": free_answer("direct", problem, reply)}


@strategy(
    "direct",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.1, Fig. 2a, Prompt 9",
    roles=("reasoner",),
    calls="1 call: the sheet",
)
def direct() -> Graph:
    return _linear(("answer", _direct))


# --- descriptive family ---------------------------------------------------------------------------


def _panel_sends(state: SolveState) -> list[Send]:
    problem = problem_of(state)
    return [
        Send("describe_panel", {**state, "inputs": {**state.get("inputs", {}), "panel": p.ref}})
        for p in problem.context_panels
    ]


def _panel_by_ref(problem: BongardProblem, ref: str) -> Panel:
    return next(panel for panel in problem.all_panels if panel.ref == ref)


async def _describe_panel(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    panel = _panel_by_ref(problem, state["inputs"]["panel"])
    image = panel_source(runtime, problem, panel)
    message = user_message(with_intro(runtime, problem, "describe_panel"), [image])
    reply, trace = await call_agent(
        runtime,
        "describer",
        [message],
        task="describe",
        images=[image],
        conversation=f"panel {panel.ref}",
        step=0,
    )
    note = {"kind": "description", "side": panel.side, "index": panel.index, "text": reply.text}
    return {"notes": [note], "trace": [trace]}


def _listing(notes: list[dict[str, Any]], side: str) -> str:
    chosen = sorted((n for n in notes if n["side"] == side), key=lambda n: n["index"])
    return "\n".join(f"{number}. {note['text'].strip()}" for number, note in enumerate(chosen, 1))


def _answer_node(name: str, prompt: str, values: Any, with_sheet: bool) -> Any:
    """An answer call over notes: text only, or with the sheet for the -direct variants."""

    async def answer(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
        runtime, problem = runtime_of(config), problem_of(state)
        images = [sheet_source(runtime, problem)] if with_sheet else []
        text = with_intro(runtime, problem, prompt, **values(state.get("notes", [])))
        reply, trace = await call_agent(
            runtime,
            "reasoner",
            [user_message(text, images)],
            task="answer",
            images=images,
            conversation="answer",
            step=0,
        )
        return {"trace": [trace], "answer": free_answer(name, problem, reply)}

    return answer


def _descriptions(notes: list[dict[str, Any]]) -> dict[str, str]:
    return {"left": _listing(notes, "left"), "right": _listing(notes, "right")}


def _fan_out_then_answer(fan_out: Any, worker: tuple[str, Any], answer: Any) -> Graph:
    graph = _graph(worker, ("answer", answer))
    graph.add_conditional_edges(START, fan_out, [worker[0]])
    graph.add_edge(worker[0], "answer")
    graph.add_edge("answer", END)
    return graph.compile()


@strategy(
    "descriptive",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.1, Fig. 2b, Prompts 10-11",
    roles=("describer", "reasoner"),
    calls="12 single-panel calls, each in its own context, then 1 image-free answer call",
)
def descriptive() -> Graph:
    answer = _answer_node("descriptive", "answer_from_descriptions", _descriptions, with_sheet=False)
    return _fan_out_then_answer(_panel_sends, ("describe_panel", _describe_panel), answer)


@strategy(
    "descriptive-direct",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.1, Fig. 2b (dashed), Prompts 10-11",
    roles=("describer", "reasoner"),
    calls="12 single-panel calls, each in its own context, then 1 answer call with the sheet",
)
def descriptive_direct() -> Graph:
    answer = _answer_node("descriptive-direct", "answer_from_descriptions", _descriptions, with_sheet=True)
    return _fan_out_then_answer(_panel_sends, ("describe_panel", _describe_panel), answer)


def _side_sends(state: SolveState) -> list[Send]:
    return [
        Send("side_conversation", {**state, "inputs": {**state.get("inputs", {}), "side": s}})
        for s in ("left", "right")
    ]


async def _side_conversation(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """One side's panels, one per turn in one conversation, refining the shared concept."""
    runtime, problem = runtime_of(config), problem_of(state)
    side = state["inputs"]["side"]
    panels = problem.left if side == "left" else problem.right
    messages: list[BaseMessage] = [
        SystemMessage(
            content=intro(runtime, problem) + "\n\n" + runtime.prompts.fill(CASE_STUDY, "side_iterative")
        )
    ]
    images: list[ImageSource] = []
    traces = []
    for number, panel in enumerate(panels, 1):
        image = panel_source(runtime, problem, panel)
        images.append(image)
        text = runtime.prompts.fill(CASE_STUDY, "side_iterative_step", number=number, count=len(panels))
        messages.append(user_message(text, [image]))
        reply, trace = await call_agent(
            runtime,
            "describer",
            messages,
            task="describe",
            images=images,
            conversation=f"{side} side",
            step=number - 1,
        )
        messages.append(AIMessage(content=reply.text))
        traces.append(trace)
    messages.append(user_message(runtime.prompts.fill(CASE_STUDY, "side_iterative_closing")))
    reply, trace = await call_agent(
        runtime,
        "describer",
        messages,
        task="describe",
        images=images,
        conversation=f"{side} side",
        step=len(panels),
    )
    return {
        "notes": [{"kind": "side", "side": side, "index": 0, "text": reply.text}],
        "trace": [*traces, trace],
    }


def _side_descriptions(notes: list[dict[str, Any]]) -> dict[str, str]:
    return {side: next(n["text"] for n in notes if n["side"] == side) for side in ("left", "right")}


@strategy(
    "descriptive-iterative",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.1, Fig. 2c, Prompts 12-13",
    roles=("describer", "reasoner"),
    calls="per side one conversation of 6 panels, one per turn, and a closing turn; then 1 image-free answer",
)
def descriptive_iterative() -> Graph:
    answer = _answer_node("descriptive-iterative", "answer_from_sides", _side_descriptions, with_sheet=False)
    return _fan_out_then_answer(_side_sends, ("side_conversation", _side_conversation), answer)


# --- contrastive family --------------------------------------------------------------------------


def _pair_sends(state: SolveState) -> list[Send]:
    problem = problem_of(state)
    return [
        Send("compare_pair", {**state, "inputs": {**state.get("inputs", {}), "pair": i}})
        for i in range(min(len(problem.left), len(problem.right)))
    ]


async def _compare_pair(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    index = state["inputs"]["pair"]
    images = [
        panel_source(runtime, problem, problem.left[index]),
        panel_source(runtime, problem, problem.right[index]),
    ]
    message = user_message(with_intro(runtime, problem, "compare_pair"), images)
    reply, trace = await call_agent(
        runtime, "describer", [message], task="compare", images=images, conversation=f"pair {index}", step=0
    )
    return {
        "notes": [{"kind": "comparison", "side": "both", "index": index, "text": reply.text}],
        "trace": [trace],
    }


def _comparisons(notes: list[dict[str, Any]]) -> dict[str, str]:
    return {"comparisons": _listing(notes, "both")}


@strategy(
    "contrastive",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.1, Fig. 2d, Prompts 14-15",
    roles=("describer", "reasoner"),
    calls="6 pair calls (L_i, R_i), each in its own context, then 1 image-free answer call",
)
def contrastive() -> Graph:
    answer = _answer_node("contrastive", "answer_from_comparisons", _comparisons, with_sheet=False)
    return _fan_out_then_answer(_pair_sends, ("compare_pair", _compare_pair), answer)


@strategy(
    "contrastive-direct",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.1, Fig. 2d (dashed), Prompts 14-15",
    roles=("describer", "reasoner"),
    calls="6 pair calls (L_i, R_i), each in its own context, then 1 answer call with the sheet",
)
def contrastive_direct() -> Graph:
    answer = _answer_node("contrastive-direct", "answer_from_comparisons", _comparisons, with_sheet=True)
    return _fan_out_then_answer(_pair_sends, ("compare_pair", _compare_pair), answer)


async def _contrastive_conversation(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """All pairs in one conversation, refining after each; the answer asked in the same one."""
    runtime, problem = runtime_of(config), problem_of(state)
    messages: list[BaseMessage] = [
        SystemMessage(
            content=intro(runtime, problem)
            + "\n\n"
            + runtime.prompts.fill(CASE_STUDY, "contrastive_iterative")
        )
    ]
    images: list[ImageSource] = []
    traces = []
    count = min(len(problem.left), len(problem.right))
    for index in range(count):
        pair = [
            panel_source(runtime, problem, problem.left[index]),
            panel_source(runtime, problem, problem.right[index]),
        ]
        images += pair
        text = runtime.prompts.fill(CASE_STUDY, "contrastive_iterative_step", number=index + 1, count=count)
        messages.append(user_message(text, pair))
        reply, trace = await call_agent(
            runtime, "reasoner", messages, task="compare", images=images, conversation="pairs", step=index
        )
        messages.append(AIMessage(content=reply.text))
        traces.append(trace)
    messages.append(user_message(runtime.prompts.fill(CASE_STUDY, "contrastive_iterative_closing")))
    reply, trace = await call_agent(
        runtime, "reasoner", messages, task="answer", images=images, conversation="pairs", step=count
    )
    return {"trace": [*traces, trace], "answer": free_answer("contrastive-iterative", problem, reply)}


@strategy(
    "contrastive-iterative",
    family=CASE_STUDY,
    paper=CASE,
    section="Sec. 3.1, Fig. 2e, Prompt 16",
    roles=("reasoner",),
    calls="one conversation: 6 image pairs, one per turn, then the answer turn",
)
def contrastive_iterative() -> Graph:
    return _linear(("conversation", _contrastive_conversation))


# --- binary settings -----------------------------------------------------------------------------


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


def _needs_concept(problem: BongardProblem) -> Concept:
    if problem.concept is None:
        raise StrategyError(f"{problem.key} has no concept to verify")
    return problem.concept


def _prepare_ground_truth(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    return {"proposed": _needs_concept(problem).model_dump(), "expected": "OK"}


def incorrect_concept(problem: BongardProblem, context: DatasetContext) -> Concept:
    """The concept of the problem 20 places on, in dataset order, skipping any equal to this one."""
    concepts = list(context.concepts)
    own = _needs_concept(problem)
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
    return _linear(("verify", _verify_node("ground-truth")))


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
    return _linear(("verify", _verify_node("incorrect-label")))


class TestImageSide(BaseModel):
    explanation: str
    concept: str
    answer: SideLabel


class TwoTestImages(BaseModel):
    first: TestImageSide
    second: TestImageSide


def _side(label: str | None) -> Literal["left", "right"] | None:
    return {"LEFT": "left", "RIGHT": "right"}.get(label or "")  # type: ignore[return-value]


def _prepare_images_to_sides(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    if not (problem.test_left and problem.test_right):
        raise StrategyError(
            f"{problem.key} has no test image on each side (for bongard-classic use -O holdout_test=true)"
        )
    order = [problem.test_left[0].ref, problem.test_right[0].ref]
    seeded_random(seed, problem, "images-to-sides").shuffle(order)
    return {"order": order, "retry_same_side": str(options.get("retry_same_side", "true")).lower() != "false"}


async def _images_to_sides(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    tests = [_panel_by_ref(problem, ref) for ref in state["inputs"]["order"]]
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
    return _side(parsed["first"]["answer"]), _side(parsed["second"]["answer"])


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
    return _linear(("classify", _images_to_sides))


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


def _test_sends(state: SolveState) -> list[Send]:
    return [
        Send("classify", {**state, "inputs": {**state["inputs"], "test": ref}})
        for ref in state["inputs"]["tests"]
    ]


async def _classify_one(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    panel = _panel_by_ref(problem, state["inputs"]["test"])
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
    side = _side(reply.parsed["answer"]) if reply.parsed else None
    note = {
        "kind": "side",
        "side": "test",
        "index": panel.index,
        "ref": panel.ref,
        "given": side,
        "text": reply.text,
        "parse_error": reply.parse_error,
    }
    return {"notes": [note], "trace": [trace]}


async def _collect_sides(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    problem = problem_of(state)
    notes = sorted((n for n in state.get("notes", []) if n["side"] == "test"), key=lambda n: n["ref"])
    sides = {n["ref"]: n["given"] for n in notes}
    expected = {ref: _panel_by_ref(problem, ref).side for ref in sides}
    errors = [n["parse_error"] for n in notes if n["parse_error"]]
    answer = Answer(
        strategy="image-to-side",
        problem=problem.key,
        text="\n".join(n["text"] for n in notes),
        sides=sides,
        expected={"sides": expected},
        correct=sides == expected,
        parse_status="failed" if errors else "ok",
        parse_error="; ".join(errors) or None,
    )
    return {"answer": answer.model_dump(mode="json", exclude={"trace"})}


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
    return _fan_out_then_answer(_test_sends, ("classify", _classify_one), _collect_sides)


# --- concept selection ---------------------------------------------------------------------------


class Selection(BaseModel):
    explanation: str
    label: int


def _prepare_concept_selection(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    count = int(options.get("concepts", 4))
    if count not in CONCEPT_COUNTS:
        raise StrategyError(f"concept-selection takes concepts in {CONCEPT_COUNTS}, not {count}")
    own = _needs_concept(problem)
    seen = {(own.left, own.right)}
    pool = []
    for _, concept in context.concepts:
        if (concept.left, concept.right) not in seen:
            seen.add((concept.left, concept.right))
            pool.append(concept)
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
    label = reply.parsed["label"] if reply.parsed else None
    answer = Answer(
        strategy="concept-selection",
        problem=problem.key,
        text=reply.text,
        label=label,
        expected={"label": state["inputs"]["label"]},
        correct=None if label is None else label == state["inputs"]["label"],
        parse_status=reply.parse_status,
        parse_error=reply.parse_error,
    )
    return {"trace": [trace], "answer": answer.model_dump(mode="json", exclude={"trace"})}


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
    return _linear(("select", _select))
