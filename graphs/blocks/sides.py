"""Test inputs classified to a side (Bongard-RWR+ I1S, D1S, D2S): each result, then the scored answer."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from agents.call import AgentReply
from agents.prompt_library import prompt_family
from datasets_io.problem import Side
from graphs.answer import AnswerParts
from graphs.nodes import Ctx, FanOut, Item, SolveState, send_each

RWR_PLUS = "Pawlonka et al., ICLR 2026 (Bongard-RWR+)"
RWR_PLUS_PROMPTS = prompt_family("rwr_plus", "graphs")
RWR_PLUS_DECODING = {"temperature": 0.5}
"""Bongard-RWR+ Sec. 4: every model at a fixed decoding temperature of 0.5."""
RWR_PLUS_FORMATS = ("bongard-rwr", "bongard-rwr-plus")
"""The datasets on which a strategy both papers define follows Bongard-RWR+ unless told."""
SideLabel = Literal["LEFT", "RIGHT"]


class SideResult(TypedDict):
    """The side one test input was given, and the reply that gave it."""

    ref: str
    given: Side | None
    concept: str
    """The concept the reasoner classified by, where it names one."""
    text: str
    parse_error: str | None


class SidesInputs(TypedDict):
    tests: list[str]
    """The test panel refs (in the order they are shown, where they are shown together)."""


class SidesState(SolveState, total=False):
    test: str
    """A classify branch's test panel ref."""
    sides: Annotated[list[SideResult], operator.add]


def _tests(item: Item[SidesInputs]) -> list[str]:
    return item.inputs["tests"]


def each_test(node: str) -> FanOut:
    """A fan-out sending each test input to `node` on its own (under the state key `test`)."""
    return send_each(node, "test", _tests)


def side_result(ref: str, reply: AgentReply, given: Side | None, concept: str = "") -> SideResult:
    return {
        "ref": ref,
        "given": given,
        "concept": concept,
        "text": reply.text,
        "parse_error": reply.parse_error,
    }


def sides_answer(item: Item[Any], state: SidesState, **details: Any) -> AnswerParts:
    """The side given to each test input against its true side."""
    results = sorted(state.get("sides", []), key=lambda result: result["ref"])
    sides = {result["ref"]: result["given"] for result in results}
    expected = {ref: item.panel(ref).side for ref in sides}
    errors = [result["parse_error"] for result in results if result["parse_error"]]
    return AnswerParts(
        text="\n".join(result["text"] for result in results),
        sides=sides,
        expected={"sides": expected},
        correct=sides == expected,
        parse_status="failed" if errors else "ok",
        parse_error="; ".join(errors) or None,
        details=details,
    )


async def answer_sides(state: SidesState, runtime: Ctx) -> SidesState:
    """The finishing node where no earlier stage adds details."""
    return {"answer": sides_answer(runtime.context, state)}
