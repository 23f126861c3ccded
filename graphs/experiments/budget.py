"""A spending cap for an experiment: no call starts that could carry the spent past the budget.

Every agent of the grid's runs is watched (`agents.managed.CallWatch`): before a call goes out, the
money spent (the grid's stored calls from earlier sessions, and every reply of this one) plus the
call's estimate (its cell's plan) must stay within the budget, else the run stops with
`BudgetReached`; after a reply, its cost is added. The bound: calls already in flight when one is
refused still finish and are paid, so a grid spends at most the budget plus those calls (at most
`concurrency - 1`) and what the last call cost beyond its estimate. In batch mode each queued call
counts at its estimate until its batch is back (a call that failed stays counted for the session).
Calls of an item a killed session left half done are kept in its checkpoint, not yet in the store: a
budget resumed after a kill counts them once their item is stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from agents.call import AgentReply, CallSpec
from datasets_io.errors import BongardError


class BudgetReached(BongardError, RuntimeError):
    """The next call could pass the budget: the grid stops, every finished call kept for a resume."""


class Budget:
    """The grid's spending: what is spent, and in batch mode (`reserve`) the estimates of the calls
    queued in batches whose replies are not back: a batch holds its calls for hours, and without
    counting them every call of a grid would pass the check before any was paid."""

    def __init__(self, limit_usd: float, spent_usd: float, reserve: bool = False) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = spent_usd
        self.reserve = reserve
        self.reserved_usd = 0.0

    def for_cell(self, estimate_usd: float) -> CellBudget:
        """The watch of one cell's agents, whose calls are estimated at `estimate_usd` each."""
        return CellBudget(self, estimate_usd)


class CellBudget:
    def __init__(self, budget: Budget, estimate_usd: float) -> None:
        self.budget = budget
        self.estimate_usd = estimate_usd

    def before(self, messages: Sequence[BaseMessage], call: CallSpec) -> None:
        budget = self.budget
        committed = budget.spent_usd + budget.reserved_usd
        if committed + self.estimate_usd > budget.limit_usd:
            queued = f" (${budget.reserved_usd:.4f} of it in batches not back)" if budget.reserved_usd else ""
            raise BudgetReached(
                f"budget ${budget.limit_usd:.4f} reached: ${committed:.4f} spent{queued}, and the next "
                f"call may cost up to ${self.estimate_usd:.4f}"
            )
        if budget.reserve:
            budget.reserved_usd += self.estimate_usd

    def after(self, reply: AgentReply) -> None:
        if self.budget.reserve:
            self.budget.reserved_usd -= self.estimate_usd
        self.budget.spent_usd += reply.cost_usd or 0.0
