"""A hard-voting ensemble: a LangGraph fan-out over judges and a vote node.

Every judge's verdict is kept beside the decision. The case study's default
is `vote:2` over four judges (App. E); `majority`, `all` and `any` are there
to compare, as its Tables 5 and 6 do.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import cache
from typing import Annotated, Any, Protocol, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send

from datasets_io.problem import Concept
from judges.verdict import Decision, Verdict, check_policy, decide

DEFAULT_POLICY = "vote:2"


class Judge(Protocol):
    @property
    def name(self) -> str: ...

    async def judge(self, concept: Concept, answer: str) -> Verdict: ...


class JudgeState(TypedDict, total=False):
    concept: dict[str, Any]
    answer: str
    judges: int
    judge_index: int
    policy: str
    verdicts: Annotated[list[dict[str, Any]], operator.add]
    decision: dict[str, Any]


def _fan_out(state: JudgeState) -> list[Send]:
    return [Send("judge", {**state, "judge_index": index}) for index in range(state["judges"])]


async def _judge(state: JudgeState, config: RunnableConfig) -> dict[str, Any]:
    judges: Sequence[Judge] = config["configurable"]["judges"]
    verdict = await judges[state["judge_index"]].judge(
        Concept.model_validate(state["concept"]), state["answer"]
    )
    return {"verdicts": [{"index": state["judge_index"], **verdict.model_dump(mode="json")}]}


def _vote(state: JudgeState) -> dict[str, Any]:
    ordered = sorted(state["verdicts"], key=lambda v: v["index"])
    verdicts = [Verdict.model_validate({k: v for k, v in item.items() if k != "index"}) for item in ordered]
    return {"decision": decide(verdicts, state["policy"]).model_dump(mode="json")}


@cache
def ensemble_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    graph: StateGraph[JudgeState] = StateGraph(JudgeState)
    graph.add_node("judge", _judge)
    graph.add_node("vote", _vote)
    graph.add_conditional_edges(START, _fan_out, ["judge"])
    graph.add_edge("judge", "vote")
    graph.add_edge("vote", END)
    return graph.compile()


class JudgeEnsemble:
    def __init__(self, judges: Sequence[Judge], policy: str = DEFAULT_POLICY) -> None:
        if not judges:
            raise ValueError("an ensemble needs at least one judge")
        self.judges = list(judges)
        self.policy = check_policy(policy)

    async def judge(self, concept: Concept, answer: str) -> Decision:
        """Every judge's verdict, concurrently, and the decision under the policy."""
        request: JudgeState = {
            "concept": concept.model_dump(),
            "answer": answer,
            "judges": len(self.judges),
            "policy": self.policy,
            "verdicts": [],
        }
        state = await ensemble_graph().ainvoke(request, config={"configurable": {"judges": self.judges}})
        return Decision.model_validate(state["decision"])
