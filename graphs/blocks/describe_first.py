"""Describe, then reason: a describer writes one description per panel, each panel in its own context,
and the reasoning that follows works on the text alone.

Serves componential analysis (structured descriptions) and the Bongard-RWR+ description
tasks (free text). The descriptions are kept in the answer, so an earlier run's
(`-S descriptions_from=RUN`) can stand in for describing again.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, TypedDict, TypeVar, cast

from langgraph.graph import END, START
from langgraph.types import Send
from pydantic import BaseModel

from agents.call import TaskKind
from agents.machine_notes import notes_of
from graphs.nodes import Ctx, FanOut, Item, Node, SolveState, ask, graph_of, panel_source, send_each, traced
from graphs.registry import Graph, Preparation, StrategyError

Description = str | dict[str, Any]
"""Free text, or a structured record (componential analysis)."""


class PanelDescription(TypedDict):
    ref: str
    description: Description
    notes: NotRequired[str]
    """The describer's machine notes (the perception agent's measurements), which a parse drops."""


class Descriptions(TypedDict):
    """The descriptions as an answer keeps them (`details["descriptions"]`) for later runs."""

    describer: str
    panels: dict[str, Description]
    notes: NotRequired[dict[str, str]]
    """Machine notes by panel, where the describer wrote any: what a reasoner that reads metadata
    (the perception agent) knows the panels by, as a language model knows them by the text."""
    from_run: NotRequired[str]


class DescribeInputs(TypedDict):
    described: list[str]
    """The panel refs to describe in this run: none when an earlier run's are reused."""
    descriptions_from: NotRequired[Descriptions]


class DescribedState(SolveState, total=False):
    panel: str
    """A describe branch's panel ref."""
    descriptions: Annotated[list[PanelDescription], operator.add]
    describe_with: dict[str, Any]
    """What a step before the describing gives the describer's question (a proposed vocabulary): a key
    of this state, since each describe branch sees only the keys its state type names."""


StateT = TypeVar("StateT", bound=DescribedState)


@dataclass(frozen=True)
class Describer:
    """How a panel is described: the `prompt` of `family`, with `schema` if structured, asked as a
    `task` (a grounding call asks for symbols rather than words)."""

    family: str
    schema: type[BaseModel] | None = None
    task: TaskKind = "describe"
    prompt: str = "describe_image"
    question: Callable[[Item[Any], Mapping[str, Any]], str] | None = None
    """The prompt written from the item and the state instead (a vocabulary proposed before)."""

    def text(self, item: Item[Any], state: Mapping[str, Any]) -> str:
        if self.question is not None:
            return self.question(item, state)
        return item.prompts.fill(self.family, self.prompt)


def as_text(description: Description) -> str:
    """A description as text: free text as it is, a structured one as JSON."""
    return description if isinstance(description, str) else json.dumps(description, ensure_ascii=False)


def describe_inputs(given: Preparation[Any], refs: list[str], *, text: bool = False) -> DescribeInputs:
    """Describe `refs`, or take them from the run named by `descriptions_from` (as text if `text`)."""
    reused = given.reused.get("descriptions_from")
    if reused is None:
        return {"described": refs}
    panels = dict(reused.value["panels"])
    missing = [ref for ref in refs if ref not in panels]
    if missing:
        raise StrategyError(
            f"run {reused.run} has no description of {given.problem.key} {', '.join(missing)}"
        )
    taken = {ref: as_text(panels[ref]) if text else panels[ref] for ref in refs}
    earlier: Descriptions = {"describer": reused.value["describer"], "panels": taken, "from_run": reused.run}
    reused_notes = reused.value.get("notes", {})
    if notes := {ref: reused_notes[ref] for ref in refs if ref in reused_notes}:
        earlier["notes"] = notes
    return {"described": [], "descriptions_from": earlier}


def descriptions_of(item: Item[DescribeInputs], state: DescribedState) -> Descriptions:
    """The panel descriptions: taken from an earlier run, or written in this one."""
    if "descriptions_from" in item.inputs:
        return item.inputs["descriptions_from"]
    written = sorted(state.get("descriptions", []), key=lambda found: found["ref"])
    descriptions: Descriptions = {
        "describer": item.run.agent("describer").spec,
        "panels": {found["ref"]: found["description"] for found in written},
    }
    if notes := {found["ref"]: found["notes"] for found in written if found.get("notes")}:
        descriptions["notes"] = notes
    return descriptions


def notes_extra(descriptions: Descriptions) -> dict[str, Any]:
    """A reasoning call's `extra` for agents that read metadata: the describer's machine notes, or
    nothing where it wrote none (so a language model's calls, and their cache keys, are unchanged)."""
    notes = descriptions.get("notes", {})
    return {"notes": [{"ref": ref, "text": text} for ref, text in sorted(notes.items())]} if notes else {}


def described_details(item: Item[DescribeInputs], state: DescribedState) -> dict[str, Any]:
    """What the answer keeps of stage 1: the descriptions and who wrote them."""
    descriptions = descriptions_of(item, state)
    return {"descriptions": descriptions, "describer": descriptions["describer"]}


def _described(item: Item[DescribeInputs]) -> list[str]:
    return item.inputs["described"]


_each_panel = send_each("describe", "panel", _described)


def _describe_or_skip(state: DescribedState, runtime: Ctx) -> list[Send] | str:
    return _each_panel(state, runtime) or "described"


def describe_first(
    state_class: type[StateT],
    describer: Describer,
    then: tuple[str, Node[StateT]],
    fan_out: FanOut | None = None,
    finish: Node[StateT] | None = None,
    again: Callable[[StateT, Ctx], bool] | None = None,
    first: tuple[str, Node[StateT]] | None = None,
) -> Graph:
    """START [-> `first`] -> describe each panel, each in its own context (or nothing, when reused)
    -> `then` (once, or once per `fan_out` Send; repeated while `again` says so) [-> `finish`] -> END."""

    async def describe(state: StateT, runtime: Ctx) -> StateT:
        item = runtime.context
        panel = item.panel(state["panel"])
        text = describer.text(item, state)
        reply = await ask(
            item,
            "describer",
            text,
            [panel_source(item, panel)],
            task=describer.task,
            conversation=f"image {panel.ref}",
            schema=describer.schema,
        )
        found: PanelDescription = {"ref": panel.ref, "description": reply.text}
        if describer.schema is not None:
            found["description"] = {"unparsed_reply": reply.text} if reply.parsed is None else reply.parsed
            if notes := notes_of(reply.text):
                found["notes"] = notes
        update: DescribedState = {"descriptions": [found]}
        return cast(StateT, update)  # a DescribedState update is an update of every state extending it

    async def described(state: StateT, runtime: Ctx) -> StateT:
        """Where the description branches join before the reasoning starts."""
        return cast(StateT, {})

    name = then[0]
    graph = graph_of(
        state_class,
        ("describe", describe),
        ("described", described),
        then,
        *([("finish", finish)] if finish else []),
    )
    if first is None:
        graph.add_conditional_edges(START, _describe_or_skip, ["describe", "described"])
    else:
        graph.add_node(first[0], cast(Any, traced(first[1])))
        graph.add_edge(START, first[0])
        graph.add_conditional_edges(first[0], _describe_or_skip, ["describe", "described"])
    graph.add_edge("describe", "described")
    if fan_out is None:
        graph.add_edge("described", name)
    else:
        graph.add_conditional_edges("described", fan_out, [name])
    after = "finish" if finish else END
    if again is None:
        graph.add_edge(name, after)
    else:

        def repeat(state: StateT, runtime: Ctx) -> str:
            return name if again(state, runtime) else after

        graph.add_conditional_edges(name, repeat, [name, after])
    if finish:
        graph.add_edge("finish", END)
    return graph.compile()
