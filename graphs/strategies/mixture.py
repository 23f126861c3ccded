"""mixture: several strategies and models combined on each problem, from their stored answers.

The case study's strategies together solved far more problems than the best single model and
strategy, and it leaves "an ensemble combining all proposed strategies" to future work (Małkiński et
al., ICML 2025, Sec. 4). Here the members are stored runs (`-S members=RUN,RUN,...`, each a
strategy and model on the same problems); their answers are read, not asked again, so a mixture
makes no call of its own and pays nothing new. Two rules combine them, on classification answers
(test panels put on sides):

- vote: each test panel goes to the side most members give it; a tie leaves it undecided (wrong);
- cascade: members are consulted in the order named, cheap first, and the answer is the first one
  two consulted members agree on (all test panels on the same sides); where none agree, the vote of
  those consulted. `-S cost_cap=USD` stops consulting before a member whose cost on the problem
  would take the consulted total past it (its answer is not used).

The answer keeps each member's sides, who was consulted and what they cost, which `bongard compare`
reads to put the mixture beside the best member and the "any member" oracle, each with its cost.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal, TypedDict

from pydantic import Field

from datasets_io.problem import Side
from graphs.answer import AnswerParts
from graphs.nodes import Ctx, SolveState, linear_graph
from graphs.registry import (
    WHOLE_ANSWERS,
    Graph,
    MemberAnswer,
    Preparation,
    StrategyError,
    StrategyOptions,
    family_strategy,
)

PAPER = "Małkiński et al., ICML 2025 (Bongard case study)"


class MembersOptions(StrategyOptions):
    """The member runs of a mixture, and whether missing answers are paid for."""

    members: str = Field(
        description="stored runs, comma-separated, whose answers are combined (one member's several runs "
        "joined with +)"
    )
    complete: bool = Field(
        default=True,
        description="run a member on the problems its runs lack, as a new run of its settings (paying only "
        "for those); false fails those problems instead",
    )


class MixtureOptions(MembersOptions):
    rule: Literal["vote", "cascade"] = Field(
        default="vote",
        description="vote: the majority side per test panel; cascade: members in order until two agree",
    )
    cost_cap: float | None = Field(
        default=None, ge=0, description="cascade: the most US dollars of members' calls consulted per problem"
    )


class MixtureInputs(TypedDict):
    members: list[MemberAnswer]
    tests: list[str]
    rule: str
    cost_cap: float | None


def _prepare(given: Preparation[MixtureOptions]) -> MixtureInputs:
    members: list[MemberAnswer] = given.reused["members"].value
    tests = [panel.ref for panel in given.problem.test_panels]
    for member in members:
        if not member.sides:
            raise StrategyError(
                f"member run {member.run} ({member.label}) put no test panel on a side on "
                f"{given.problem.key}: a mixture combines classification answers"
            )
    return {
        "members": members,
        "tests": tests,
        "rule": given.options.rule,
        "cost_cap": given.options.cost_cap,
    }


def vote(members: list[MemberAnswer], tests: list[str]) -> dict[str, Side | None]:
    """Each test panel's side by most members; a tie, or no member deciding it, leaves it undecided."""
    decided: dict[str, Side | None] = {}
    for ref in tests:
        counts = Counter(side for member in members if (side := member.sides.get(ref)) is not None)
        ranked = counts.most_common()
        tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        decided[ref] = None if not ranked or tied else ranked[0][0]
    return decided


def cascade(
    members: list[MemberAnswer], tests: list[str], cost_cap: float | None
) -> tuple[dict[str, Side | None], list[MemberAnswer]]:
    """The first answer two consulted members agree on, else the vote of those consulted; and who
    was consulted (in order, within the cost cap)."""
    consulted: list[MemberAnswer] = []
    spent = 0.0
    for member in members:
        cost = member.cost_usd or 0.0
        if cost_cap is not None and consulted and spent + cost > cost_cap:
            break
        consulted.append(member)
        spent += cost
        sides = {ref: member.sides.get(ref) for ref in tests}
        if None not in sides.values() and any(
            {ref: other.sides.get(ref) for ref in tests} == sides for other in consulted[:-1]
        ):
            return sides, consulted
    return vote(consulted, tests), consulted


async def _combine(state: SolveState, runtime: Ctx[MixtureInputs]) -> SolveState:
    item = runtime.context
    members, tests = item.inputs["members"], item.inputs["tests"]
    if item.inputs["rule"] == "cascade":
        sides, consulted = cascade(members, tests, item.inputs["cost_cap"])
    else:
        sides, consulted = vote(members, tests), members
    truth = {ref: item.panel(ref).side for ref in tests}
    costs = [member.cost_usd for member in consulted]
    answer = AnswerParts(
        text="\n".join(f"{ref}: {side or 'undecided'}" for ref, side in sides.items()),
        sides=sides,
        expected={"sides": truth},
        correct=sides == truth,
        parse_status="ok",
        details={
            "rule": item.inputs["rule"],
            "members": [
                {
                    "run": m.run,
                    "label": m.label,
                    "sides": m.sides,
                    "correct": m.correct,
                    "cost_usd": m.cost_usd,
                }
                for m in members
            ],
            "consulted": [member.run for member in consulted],
            "members_cost_usd": None if None in costs else round(sum(c or 0.0 for c in costs), 6),
        },
    )
    return {"answer": answer}


reads_members = family_strategy(
    family="mixture",
    paper=PAPER,
    roles=(),
    calls="none: the members' stored answers are read, not asked again",
    count=lambda shape: 0,
    reuses={"members": (WHOLE_ANSWERS, "")},
    card={"attempts": "each member run's own; combined attempt by attempt (else the member's first)"},
)
"""`@strategy` for a mixture: no call of its own, its members' stored answers read (`-S members=`)."""


@reads_members(
    "mixture",
    section="Sec. 4, the ensemble it leaves to future work: members' stored answers combined by vote or "
    "by a cascade with a cost cap (beyond the paper)",
    images="none: no call",
    contexts="none: no call",
    scoring="the combined sides of the test panels against the truth, as the members' own settings score",
    options=MixtureOptions,
    prepare=_prepare,
    needs_test_panels=True,
)
def mixture() -> Graph:
    return linear_graph(SolveState, ("combine", _combine))
