"""Verdicts: one judge's reading of one answer, and the policies that combine several."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from datasets_io.records import VERDICT_LABELS, Verdict, VerdictLabel
from judges.errors import JudgeError

__all__ = ["Decision", "Verdict", "VerdictLabel", "check_policy", "decide"]

POLICY = re.compile(r"^(vote:(?P<k>\d+)|majority|all|any)$")


class Decision(BaseModel):
    """An ensemble's decision under a policy, with every judge's verdict beside it."""

    policy: str
    ok: bool
    counts: dict[VerdictLabel, int] = Field(default_factory=dict)
    verdicts: list[Verdict] = Field(default_factory=list)

    @property
    def decided(self) -> bool:
        """Whether some judge voted (ok or wrong): where every one abstained or refused, the answer
        is not wrong but unjudged."""
        return any(verdict.label in ("ok", "wrong") for verdict in self.verdicts)


def check_policy(policy: str, judges: int | None = None) -> str:
    """`vote:K`, `majority`, `all` or `any`; anything else is refused with the choices, and so is
    a `vote:K` that `judges` judges could never reach (it would accept nothing)."""
    match = POLICY.match(policy)
    if not match:
        raise JudgeError(
            f"unknown voting policy {policy!r}; policies: vote:K (e.g. vote:2), majority, all, any"
        )
    if judges is not None and match.group("k") is not None and int(match.group("k")) > judges:
        raise JudgeError(
            f"policy {policy} needs {match.group('k')} votes and there are {judges} judges; "
            f"use vote:{judges} or fewer, or add judges"
        )
    return policy


def default_policy(judges: int) -> str:
    """The case study's `vote:2` (App. E), or a lone judge's own verdict (`vote:1`)."""
    return f"vote:{min(2, judges)}"


def decide(verdicts: Sequence[Verdict], policy: str) -> Decision:
    """Combine verdicts: `vote:K` ok when at least K say ok (the case study uses 2 of 4),
    `majority` when more than half of all judges do, `all` when every judge does, `any`
    when one does. Abstentions are counted and never count as ok; a judge's refusal is no vote at
    all (it counts in no total)."""
    match = POLICY.match(check_policy(policy))
    assert match is not None
    counts = Counter(v.label for v in verdicts)
    oks, total = counts["ok"], len(verdicts) - counts["refused"]
    if match.group("k") is not None:
        ok = oks >= int(match.group("k"))
    elif policy == "majority":
        ok = oks * 2 > total
    elif policy == "all":
        ok = total > 0 and oks == total
    else:
        ok = oks > 0
    return Decision(
        policy=policy,
        ok=ok,
        counts={label: counts[label] for label in VERDICT_LABELS},
        verdicts=list(verdicts),
    )


def silence(counts: Mapping[str, int]) -> str | None:
    """`no verdict on 5 of 5: check this judge` where a judge abstained or refused on most answers it
    was given (a tiny model repeating its instructions); None where it voted on most."""
    silent, given = counts.get("abstain", 0) + counts.get("refused", 0), sum(counts.values())
    return f"no verdict on {silent} of {given}: check this judge" if silent * 2 > given else None
