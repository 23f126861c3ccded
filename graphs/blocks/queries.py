"""Query classification: a problem's context and one query image at a time (Vaishnav & Tammet, Sec. 4).

Any dataset with test images gives query problems: each test image is a query
and a left-side query is "positive" (it shows the left concept). A
Bongard-OpenWorld record gives two: its positive and its negative query. Every
query is classified in its own contexts; the answer holds the side given to each
query, the truth, and per query the model's rule, query description and conclusion.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel

from agents.call import AgentReply
from datasets_io.problem import BongardProblem, Side
from graphs.answer import AnswerParts
from graphs.nodes import Ctx, FanOut, Item, SolveState, send_each

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


class QueryInputs(TypedDict):
    queries: list[str]
    """The test panel refs, each classified on its own."""
    category: str | None


class QueryResult(TypedDict):
    """What one query's classification found."""

    ref: str
    given: Side | None
    conclusion: Conclusion | None
    rule: str
    query: str
    text: str
    parse_error: str | None


class QueryState(SolveState, total=False):
    query: str
    """A query branch's test panel ref."""
    queries: Annotated[list[QueryResult], operator.add]


def prepare_queries(problem: BongardProblem) -> QueryInputs:
    return {"queries": [panel.ref for panel in problem.test_panels], "category": problem.concept_group}


def _queries(item: Item[QueryInputs]) -> list[str]:
    return item.inputs["queries"]


def each_query(node: str) -> FanOut:
    """A fan-out sending each query to `node` on its own (under the state key `query`)."""
    return send_each(node, "query", _queries)


def query_result(ref: str, reply: AgentReply) -> QueryResult:
    parsed = reply.parsed or {}
    conclusion = parsed.get("conclusion")
    return {
        "ref": ref,
        "given": CONCLUSION_SIDES.get(conclusion or ""),
        "conclusion": conclusion,
        "rule": parsed.get("rule", ""),
        "query": parsed.get("query", ""),
        "text": reply.text,
        "parse_error": reply.parse_error,
    }


def query_answer(item: Item[QueryInputs], state: QueryState, **stage_details: Any) -> AnswerParts:
    """Every query's side against the truth, with the per-query details and what earlier stages
    add (a rule summary, the descriptions)."""
    results = sorted(state.get("queries", []), key=lambda result: result["ref"])
    sides = {result["ref"]: result["given"] for result in results}
    truth = {ref: item.panel(ref).side for ref in sides}
    errors = [f"{result['ref']}: {result['parse_error']}" for result in results if result["parse_error"]]
    return AnswerParts(
        text="\n\n".join(f"[{result['ref']}]\n{result['text']}" for result in results),
        sides=sides,
        expected={"sides": truth},
        correct=all(sides[ref] == truth[ref] for ref in sides),
        parse_status="failed" if errors else "ok",
        parse_error="; ".join(errors) or None,
        details={
            "category": item.inputs["category"],
            "queries": {
                result["ref"]: {
                    "conclusion": result["conclusion"],
                    "rule": result["rule"],
                    "query": result["query"],
                }
                for result in results
            },
            **stage_details,
        },
    )


async def answer_queries(state: QueryState, runtime: Ctx[QueryInputs]) -> QueryState:
    """The finishing node where no earlier stage adds details."""
    return {"answer": query_answer(runtime.context, state)}
