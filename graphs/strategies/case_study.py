"""The natural-language strategies of the Bongard case study (Małkiński, Pawlonka, Mańdziuk, ICML 2025).

Sec. 3.1, Fig. 2 and App. I.4: direct, descriptive, descriptive-iterative,
descriptive-direct, contrastive, contrastive-iterative, contrastive-direct.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypedDict

from agents.call import ImageSource
from datasets_io.problem import Side
from graphs.blocks.turns import Dialogue, TurnsState, dialogues_graph, shown_then_asked
from graphs.nodes import (
    CASE,
    CASE_STUDY,
    Ctx,
    FanOut,
    Item,
    Node,
    ask,
    fan_out_graph,
    free_answer,
    intro,
    linear_graph,
    panel_source,
    panel_sources,
    send_each,
    sheet_source,
    with_intro,
)
from graphs.registry import Graph, family_strategy


class PanelText(TypedDict):
    """What a describer wrote about one panel (or, for comparisons, one left-right pair)."""

    side: Side | None
    """None for a pair's comparison."""
    index: int
    text: str


class SideText(TypedDict):
    side: Side
    text: str


class CaseStudyState(TurnsState, total=False):
    panel: str
    """A describe branch's panel ref."""
    pair: int
    """A compare branch's pair index."""
    descriptions: Annotated[list[PanelText], operator.add]
    side_descriptions: Annotated[list[SideText], operator.add]
    comparisons: Annotated[list[PanelText], operator.add]


case_study_strategy = family_strategy(
    family=CASE_STUDY,
    paper=CASE,
    judged=True,
    card={
        "attempts": "not stated: 1 run; Tables 1 and 4 count the problems solved",
        "scoring": "free-form: 4 MLLM judges, text-only strict Prompt 3, hard voting: OK from >= 2 of 4 "
        "(Sec. 3.2, App. E)",
    },
)
"""The case study's Sec. 3.1 strategies: one paper, free-form answers judged by its ensemble."""


# --- direct -------------------------------------------------------------------------------------


async def _direct(state: CaseStudyState, runtime: Ctx) -> CaseStudyState:
    item = runtime.context
    reply = await ask(
        item,
        "reasoner",
        with_intro(item, "direct"),
        [sheet_source(item)],
        task="answer",
        conversation="answer",
    )
    return {"answer": free_answer(reply)}


@case_study_strategy(
    "direct",
    section="Sec. 3.1, Fig. 2a, Prompt 9",
    roles=("reasoner",),
    calls="1 call: the sheet",
    count=lambda shape: 1,
    images="1 call with the sheet: all 12 panels in one 1024-px-wide image, 3 rows x 2 per side, a separator",
    contexts="1 call in its own context",
)
def direct() -> Graph:
    return linear_graph(CaseStudyState, ("answer", _direct))


# --- one answer call over what the describer wrote ---------------------------------------------------


def _answer_node(
    prompt: str, values: Callable[[CaseStudyState], dict[str, str]], notes: str, with_sheet: bool
) -> Node[CaseStudyState]:
    """The answer call over the `notes` state key: text only, or with the sheet (-direct variants)."""

    async def answer(state: CaseStudyState, runtime: Ctx) -> CaseStudyState:
        item = runtime.context
        reply = await ask(
            item,
            "reasoner",
            with_intro(item, prompt, **values(state)),
            [sheet_source(item)] if with_sheet else [],
            task="answer",
            conversation="answer",
            extra={"notes": state.get(notes, [])},  # what the prompt lists, for agents that read metadata
        )
        return {"answer": free_answer(reply)}

    return answer


def _listing(notes: Sequence[PanelText], side: Side | None) -> str:
    chosen = sorted((n for n in notes if n["side"] == side), key=lambda n: n["index"])
    return "\n".join(f"{number}. {note['text'].strip()}" for number, note in enumerate(chosen, 1))


def _fan_out_then_answer(
    fan_out: FanOut,
    worker: tuple[str, Node[CaseStudyState]],
    prompt: str,
    values: Callable[[CaseStudyState], dict[str, str]],
    notes: str,
    with_sheet: bool,
) -> Graph:
    """Independent calls (fanned out), then one answer call over what they wrote."""
    return fan_out_graph(CaseStudyState, fan_out, worker, _answer_node(prompt, values, notes, with_sheet))


# --- descriptive family ---------------------------------------------------------------------------


async def _describe_panel(state: CaseStudyState, runtime: Ctx) -> CaseStudyState:
    item = runtime.context
    panel = item.panel(state["panel"])
    reply = await ask(
        item,
        "describer",
        with_intro(item, "describe_panel"),
        [panel_source(item, panel)],
        task="describe",
        conversation=f"panel {panel.ref}",
    )
    return {"descriptions": [{"side": panel.side, "index": panel.index, "text": reply.text}]}


_each_panel = send_each("describe_panel", "panel", lambda item: [p.ref for p in item.problem.context_panels])


def _descriptions(state: CaseStudyState) -> dict[str, str]:
    notes = state.get("descriptions", [])
    return {"left": _listing(notes, "left"), "right": _listing(notes, "right")}


def _descriptive(with_sheet: bool) -> Graph:
    return _fan_out_then_answer(
        _each_panel,
        ("describe_panel", _describe_panel),
        "answer_from_descriptions",
        _descriptions,
        "descriptions",
        with_sheet,
    )


DESCRIPTIVE_ROLES = ("describer", "reasoner")


@case_study_strategy(
    "descriptive",
    section="Sec. 3.1, Fig. 2b, Prompts 10-11",
    roles=DESCRIPTIVE_ROLES,
    calls="12 single-panel calls, each in its own context, then 1 image-free answer call",
    count=lambda shape: shape.context + 1,
    images="describer: 1 panel per call (12 calls); answer call: none, the 12 descriptions as text",
    contexts="none shared: each panel described afresh (Sec. 3.1); the answer call afresh",
)
def descriptive() -> Graph:
    return _descriptive(with_sheet=False)


@case_study_strategy(
    "descriptive-direct",
    section="Sec. 3.1, Fig. 2b (dashed), Prompts 10-11",
    roles=DESCRIPTIVE_ROLES,
    calls="12 single-panel calls, each in its own context, then 1 answer call with the sheet",
    count=lambda shape: shape.context + 1,
    images="describer: 1 panel per call (12 calls); answer call: 1 image, the sheet (12 panels in one "
    "1024-px image)",
    contexts="none shared: each panel described afresh; the answer call afresh, with descriptions and sheet",
)
def descriptive_direct() -> Graph:
    return _descriptive(with_sheet=True)


def _side_conversation(side: Side) -> Dialogue:
    """One side's panels, one per turn in one conversation, refining the shared concept."""

    def panels(item: Item[Any]) -> list[list[ImageSource]]:
        shown = item.problem.left if side == "left" else item.problem.right
        return [[panel_source(item, panel)] for panel in shown]

    return Dialogue(
        f"{side} side",
        "describer",
        shown_then_asked(
            panels, "side_iterative_step", "side_iterative_closing", task="describe", closing_task="describe"
        ),
        finish=lambda item, reply: {"side_descriptions": [{"side": side, "text": reply.text}]},
        system=lambda item: _system(item, "side_iterative"),
    )


def _side_descriptions(state: CaseStudyState) -> dict[str, str]:
    found = {note["side"]: note["text"] for note in state.get("side_descriptions", [])}
    return {"left": found["left"], "right": found["right"]}


@case_study_strategy(
    "descriptive-iterative",
    section="Sec. 3.1, Fig. 2c, Prompts 12-13",
    roles=DESCRIPTIVE_ROLES,
    calls="per side one conversation of 6 panels, one per turn, and a closing turn; then 1 image-free answer",
    count=lambda shape: 2 * (shape.context // 2 + 1) + 1,
    images="side conversations: 1 panel per turn, 6 per side, closing turn none; answer call: none",
    contexts="one conversation per side (6 panel turns + closing turn); the answer call afresh",
)
def descriptive_iterative() -> Graph:
    answer = _answer_node("answer_from_sides", _side_descriptions, "side_descriptions", with_sheet=False)
    sides = [_side_conversation("left"), _side_conversation("right")]
    return dialogues_graph(CaseStudyState, sides, then=("finish", answer))


# --- contrastive family --------------------------------------------------------------------------


def _pair_count(item: Item[Any]) -> int:
    return min(len(item.problem.left), len(item.problem.right))


def _system(item: Item[Any], prompt: str) -> str:
    """The system turn of an iterative conversation: the introduction and how the turns go."""
    return intro(item) + "\n\n" + item.prompts.fill(CASE_STUDY, prompt)


async def _compare_pair(state: CaseStudyState, runtime: Ctx) -> CaseStudyState:
    item, index = runtime.context, state["pair"]
    images = panel_sources(item, [item.problem.left[index], item.problem.right[index]])
    reply = await ask(
        item,
        "describer",
        with_intro(item, "compare_pair"),
        images,
        task="compare",
        conversation=f"pair {index}",
    )
    return {"comparisons": [{"side": None, "index": index, "text": reply.text}]}


def _comparisons(state: CaseStudyState) -> dict[str, str]:
    return {"comparisons": _listing(state.get("comparisons", []), None)}


def _contrastive(with_sheet: bool) -> Graph:
    return _fan_out_then_answer(
        send_each("compare_pair", "pair", lambda item: range(_pair_count(item))),
        ("compare_pair", _compare_pair),
        "answer_from_comparisons",
        _comparisons,
        "comparisons",
        with_sheet,
    )


@case_study_strategy(
    "contrastive",
    section="Sec. 3.1, Fig. 2d, Prompts 14-15",
    roles=DESCRIPTIVE_ROLES,
    calls="6 pair calls (L_i, R_i), each in its own context, then 1 image-free answer call",
    count=lambda shape: shape.context // 2 + 1,
    images="describer: 2 images per call, the pair (L_i, R_i), 6 calls; answer call: none, the 6 "
    "comparisons as text",
    contexts="none shared: each pair compared afresh (Sec. 3.1); the answer call afresh",
)
def contrastive() -> Graph:
    return _contrastive(with_sheet=False)


@case_study_strategy(
    "contrastive-direct",
    section="Sec. 3.1, Fig. 2d (dashed), Prompts 14-15",
    roles=DESCRIPTIVE_ROLES,
    calls="6 pair calls (L_i, R_i), each in its own context, then 1 answer call with the sheet",
    count=lambda shape: shape.context // 2 + 1,
    images="describer: 2 images per call, the pair (L_i, R_i), 6 calls; answer call: 1 image, the sheet "
    "(12 panels, one 1024-px image)",
    contexts="none shared: each pair compared afresh; the answer call afresh, with comparisons and sheet",
)
def contrastive_direct() -> Graph:
    return _contrastive(with_sheet=True)


def _pairs(item: Item[Any]) -> list[list[ImageSource]]:
    problem = item.problem
    return [panel_sources(item, [problem.left[i], problem.right[i]]) for i in range(_pair_count(item))]


PAIRS = Dialogue(
    "pairs",
    "reasoner",
    shown_then_asked(
        _pairs,
        "contrastive_iterative_step",
        "contrastive_iterative_closing",
        task="compare",
        closing_task="answer",
    ),
    finish=lambda item, reply: {"answer": free_answer(reply)},
    system=lambda item: _system(item, "contrastive_iterative"),
)
"""All pairs in one conversation, refining after each; the answer asked in the same one."""


@case_study_strategy(
    "contrastive-iterative",
    section="Sec. 3.1, Fig. 2e, Prompt 16",
    roles=("reasoner",),
    calls="one conversation: 6 image pairs, one per turn, then the answer turn",
    count=lambda shape: shape.context // 2 + 1,
    images="2 images per turn, the pair (L_i, R_i), 6 turns; the answer turn: none",
    contexts="one conversation: the 6 pair turns and the answer turn (Sec. 3.1, Fig. 2e)",
)
def contrastive_iterative() -> Graph:
    return dialogues_graph(CaseStudyState, [PAIRS])
