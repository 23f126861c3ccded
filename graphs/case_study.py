"""The natural-language strategies of the Bongard case study (Małkiński, Pawlonka, Mańdziuk, ICML 2025).

Sec. 3.1, Fig. 2 and App. I.4: direct, descriptive, descriptive-iterative,
descriptive-direct, contrastive, contrastive-iterative, contrastive-direct.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Send

from agents.call import ImageSource
from graphs.nodes import (
    CASE_STUDY,
    Graph,
    SolveState,
    call_agent,
    fan_out_graph,
    free_answer,
    intro,
    linear_graph,
    panel_by_ref,
    panel_source,
    problem_of,
    runtime_of,
    sheet_source,
    user_message,
    with_intro,
)
from graphs.registry import strategy

CASE = "Małkiński et al., ICML 2025 (Bongard case study)"


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
    return linear_graph(("answer", _direct))


# --- descriptive family ---------------------------------------------------------------------------


def _panel_sends(state: SolveState) -> list[Send]:
    problem = problem_of(state)
    return [
        Send("describe_panel", {**state, "inputs": {**state.get("inputs", {}), "panel": p.ref}})
        for p in problem.context_panels
    ]


async def _describe_panel(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    panel = panel_by_ref(problem, state["inputs"]["panel"])
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
        notes = state.get("notes", [])
        reply, trace = await call_agent(
            runtime,
            "reasoner",
            [user_message(with_intro(runtime, problem, prompt, **values(notes)), images)],
            task="answer",
            images=images,
            conversation="answer",
            step=0,
            extra={"notes": notes},  # what the prompt lists, for agents that read metadata
        )
        return {"trace": [trace], "answer": free_answer(name, problem, reply)}

    return answer


def _descriptions(notes: list[dict[str, Any]]) -> dict[str, str]:
    return {"left": _listing(notes, "left"), "right": _listing(notes, "right")}


def _register_fan_out(
    name: str, *, section: str, calls: str, fan_out: Any, worker: tuple[str, Any], prompt: str, values: Any,
    with_sheet: bool,
) -> None:  # fmt: skip
    """Register a strategy of independent calls (fanned out) followed by one answer call."""

    def build() -> Graph:
        return fan_out_graph(fan_out, worker, _answer_node(name, prompt, values, with_sheet))

    strategy(
        name, family=CASE_STUDY, paper=CASE, section=section, roles=("describer", "reasoner"), calls=calls
    )(build)


for _suffix, _section, _with_sheet, _answer_call in (
    ("", "Sec. 3.1, Fig. 2b, Prompts 10-11", False, "1 image-free answer call"),
    ("-direct", "Sec. 3.1, Fig. 2b (dashed), Prompts 10-11", True, "1 answer call with the sheet"),
):
    _register_fan_out(
        f"descriptive{_suffix}", section=_section, with_sheet=_with_sheet,
        calls=f"12 single-panel calls, each in its own context, then {_answer_call}",
        fan_out=_panel_sends, worker=("describe_panel", _describe_panel), prompt="answer_from_descriptions",
        values=_descriptions,
    )  # fmt: skip


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
    return fan_out_graph(_side_sends, ("side_conversation", _side_conversation), answer)


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


for _suffix, _section, _with_sheet, _answer_call in (
    ("", "Sec. 3.1, Fig. 2d, Prompts 14-15", False, "1 image-free answer call"),
    ("-direct", "Sec. 3.1, Fig. 2d (dashed), Prompts 14-15", True, "1 answer call with the sheet"),
):
    _register_fan_out(
        f"contrastive{_suffix}", section=_section, with_sheet=_with_sheet,
        calls=f"6 pair calls (L_i, R_i), each in its own context, then {_answer_call}",
        fan_out=_pair_sends, worker=("compare_pair", _compare_pair), prompt="answer_from_comparisons",
        values=_comparisons,
    )  # fmt: skip


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
    return linear_graph(("conversation", _contrastive_conversation))
