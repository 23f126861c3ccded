"""Query classification: a problem's context and one query image at a time (Vaishnav & Tammet, Sec. 4).

Any dataset with test images gives query problems: each test image is a query
and a left-side query is "positive" (it shows the left concept). A
Bongard-OpenWorld record gives two: its positive and its negative query. Every
query is classified in its own contexts; the answer holds the side given to each
query, the truth, and per query the model's rule, query description and conclusion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send
from pydantic import BaseModel

from agents.call import AgentReply
from datasets_io.problem import BongardProblem, Side
from graphs.answer import Answer
from graphs.nodes import SolveState, panel_by_ref, problem_of, send_each
from graphs.registry import DatasetContext

Conclusion = Literal["positive", "negative"]
CONCLUSION_SIDES: dict[str, Side] = {"positive": "left", "negative": "right"}


class QueryVerdict(BaseModel):
    """The four outputs every paradigm asks for (Sec. 5): analysis, rule, query description, conclusion."""

    analysis: str
    rule: str
    query: str
    conclusion: Conclusion


class QueryConclusion(BaseModel):
    """The conclusion alone: the chain-of-thought ablation (App. A.6.3)."""

    conclusion: Conclusion


def prepare_queries(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    return {"queries": [panel.ref for panel in problem.test_panels], "category": problem.concept_group}


def query_sends(node: str) -> Callable[[SolveState], list[Send]]:
    """A fan-out sending each query to `node` on its own."""
    return send_each(node, "queries", "query")


def query_note(ref: str, reply: AgentReply) -> dict[str, Any]:
    """What one query's classification found, as a note for the collecting node."""
    parsed = reply.parsed or {}
    conclusion = parsed.get("conclusion")
    return {
        "kind": "query",
        "side": "query",
        "ref": ref,
        "given": CONCLUSION_SIDES.get(conclusion or ""),
        "conclusion": conclusion,
        "rule": parsed.get("rule", ""),
        "query": parsed.get("query", ""),
        "text": reply.text,
        "parse_error": reply.parse_error,
    }


StageDetails = Callable[[SolveState, RunnableConfig], dict[str, Any]]


def collect_queries(strategy: str, stage_details: StageDetails | None = None) -> Any:
    """The finishing node: every query's side against the truth, with the per-query details
    and what `stage_details` adds from earlier stages (a rule summary, the descriptions)."""

    async def collect(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
        problem = problem_of(state)
        notes = sorted((n for n in state.get("notes", []) if n["kind"] == "query"), key=lambda n: n["ref"])
        sides = {n["ref"]: n["given"] for n in notes}
        errors = [f"{n['ref']}: {n['parse_error']}" for n in notes if n["parse_error"]]
        answer = Answer(
            strategy=strategy,
            problem=problem.key,
            text="\n\n".join(f"[{n['ref']}]\n{n['text']}" for n in notes),
            sides=sides,
            expected={"sides": {ref: panel_by_ref(problem, ref).side for ref in sides}},
            correct=all(sides[ref] == panel_by_ref(problem, ref).side for ref in sides),
            parse_status="failed" if errors else "ok",
            parse_error="; ".join(errors) or None,
            details={
                "category": state["inputs"].get("category"),
                "queries": {
                    n["ref"]: {"conclusion": n["conclusion"], "rule": n["rule"], "query": n["query"]}
                    for n in notes
                },
                **(stage_details(state, config) if stage_details else {}),
            },
        )
        return {"answer": answer.model_dump(mode="json", exclude={"trace"})}

    return collect
