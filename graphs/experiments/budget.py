"""A spending cap for an experiment: no call starts that could carry the spent past the budget.

Every agent of the grid's runs is watched (`agents.managed.CallWatch`): before a call goes out, the
money spent (the grid's stored calls from earlier sessions, and every reply of this one) plus the
call's estimate (its cell's plan) must stay within the budget, else the run stops with
`BudgetReached`; after a reply, its cost is added. The bound: calls already in flight when one is
refused still finish and are paid, so a grid spends at most the budget plus those calls (at most
`concurrency - 1`) and what the last call cost beyond its estimate. Calls of an item a killed
session left half done are kept in its checkpoint, not yet in the store: a budget resumed after a
kill counts them once their item is stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from agents.call import AgentReply, CallSpec
from datasets_io.errors import BongardError


class BudgetReached(BongardError, RuntimeError):
    """The next call could pass the budget: the grid stops, every finished call kept for a resume."""


class Budget:
    def __init__(self, limit_usd: float, spent_usd: float) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = spent_usd
        self.next_call_usd = 0.0
        """The estimate of one call of the cell being run."""

    def before(self, messages: Sequence[BaseMessage], call: CallSpec) -> None:
        if self.spent_usd + self.next_call_usd > self.limit_usd:
            raise BudgetReached(
                f"budget ${self.limit_usd:.4f} reached: ${self.spent_usd:.4f} spent, and the next call "
                f"may cost up to ${self.next_call_usd:.4f}"
            )

    def after(self, reply: AgentReply) -> None:
        self.spent_usd += reply.cost_usd or 0.0
