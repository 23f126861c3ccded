"""mixture-rules: several runs' stated rules combined without a judge, by agreement.

`mixture` combines answers that put test panels on sides, where a vote is exact. A stated rule has no
vote: two members rarely word the same rule alike. The rule here is the one that agrees most with the
other members' (the medoid): for each member's answer, its mean ROUGE-L F1 (rouge-score, the metric
the Bongard-RWR+ paper reports for generated concepts) against every other member's, and the highest
wins; ties go to the member named first, so a two-member mixture answers with its first member. Like
`mixture`, it reads the members' stored answers (`-S members=RUN,...`), makes no call and pays only
for members run where they lack a problem. Its answer is free-form and judged like any stated rule
(`bongard judge`); it keeps every member's text and agreement, and which one it chose.
"""

from __future__ import annotations

from typing import TypedDict

from graphs.answer import AnswerParts, parse_rules
from graphs.nodes import Ctx, SolveState, linear_graph
from graphs.registry import (
    Graph,
    MemberAnswer,
    Preparation,
    StrategyError,
)
from graphs.strategies.mixture import MembersOptions, reads_members


class RuleMixtureInputs(TypedDict):
    members: list[MemberAnswer]


def _prepare(given: Preparation[MembersOptions]) -> RuleMixtureInputs:
    members: list[MemberAnswer] = given.reused["members"].value
    stated = [member for member in members if member.text.strip()]
    if not stated:
        raise StrategyError(f"no member run stated a rule on {given.problem.key}: nothing to combine")
    return {"members": stated}


def agreement(texts: list[str]) -> list[float]:
    """Each text's mean ROUGE-L F1 against every other text (1.0 for a text alone)."""
    from rouge_score import rouge_scorer

    if len(texts) == 1:
        return [1.0]
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    pair = {
        (i, j): scorer.score(texts[i], texts[j])["rougeL"].fmeasure
        for i in range(len(texts))
        for j in range(i + 1, len(texts))
    }
    return [
        sum(pair[min(i, j), max(i, j)] for j in range(len(texts)) if j != i) / (len(texts) - 1)
        for i in range(len(texts))
    ]


async def _choose(state: SolveState, runtime: Ctx[RuleMixtureInputs]) -> SolveState:
    members = runtime.context.inputs["members"]
    scores = agreement([member.text for member in members])
    chosen = max(range(len(members)), key=lambda index: (scores[index], -index))
    text = members[chosen].text
    left, right = parse_rules(text)
    answer = AnswerParts(
        text=text,
        left_rule=left,
        right_rule=right,
        parse_status="ok",
        details={
            "rule": "agree",
            "chosen": members[chosen].run,
            "members": [
                {
                    "run": m.run,
                    "label": m.label,
                    "text": m.text,
                    "agreement": round(score, 4),
                    "cost_usd": m.cost_usd,
                }
                for m, score in zip(members, scores, strict=True)
            ],
        },
    )
    return {"answer": answer}


@reads_members(
    "mixture-rules",
    section="Sec. 4, the ensemble it leaves to future work: members' stated rules combined by agreement, "
    "without a judge (beyond the paper)",
    images="none: no call",
    contexts="none: no call",
    judged=True,
    scoring="free-form: the chosen rule is judged as the members' would be (bongard judge)",
    options=MembersOptions,
    prepare=_prepare,
)
def mixture_rules() -> Graph:
    return linear_graph(SolveState, ("choose", _choose))
