"""A hard-voting ensemble: every judge's verdict, gathered concurrently, reduced by a policy.

As inspect_ai's `multi_scorer` does; a LangGraph fan-out bought nothing here, since each
judge's call is cached on its own and there is nothing to checkpoint. Every verdict is kept
beside the decision. The case study's default is `vote:2` over four judges (App. E);
`majority`, `all` and `any` are there to compare, as its Tables 5 and 6 do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from datasets_io.problem import Concept
from judges.errors import JudgeError
from judges.verdict import Decision, Verdict, check_policy, decide, default_policy


class Judge(Protocol):
    @property
    def name(self) -> str: ...

    async def judge(self, concept: Concept, answer: str) -> Verdict: ...


class JudgeEnsemble:
    def __init__(self, judges: Sequence[Judge], policy: str | None = None) -> None:
        """`policy` None: `vote:2`, as the case study, or a lone judge's own verdict. A judge named
        twice is refused: counted twice, one judge could meet `vote:2` alone."""
        if not judges:
            raise JudgeError("an ensemble needs at least one judge")
        names = [judge.name for judge in judges]
        if twice := sorted({name for name in names if names.count(name) > 1}):
            raise JudgeError(
                f"judge {', '.join(twice)} is named twice: each judge votes once (one judge could meet "
                "a vote alone); name each judge once"
            )
        self.judges = list(judges)
        self.policy = check_policy(policy or default_policy(len(judges)), len(judges))

    async def judge(self, concept: Concept, answer: str) -> Decision:
        """Every judge's verdict, concurrently, and the decision under the policy."""
        verdicts = await asyncio.gather(*(judge.judge(concept, answer) for judge in self.judges))
        return decide(verdicts, self.policy)
