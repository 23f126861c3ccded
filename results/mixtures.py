"""A mixture beside its best member and the "any member" oracle, each with its interval and cost.

A mixture run (`graphs.strategies.mixture`; `mixture_rules` for stated rules, scored once judged)
stores, with each answer, every member's answer and cost (and for classification, which members it
consulted). On the problems it answered: the mixture's solved count and what the members it
consulted cost; the best single member's (most solved, the first named among equals) and its cost;
the oracle's, a problem solved when any member solved it, at the cost of running every member.
Costs are the members' calls (a mixture makes none); unknown where a price was.
"""

from __future__ import annotations

from dataclasses import dataclass

from results.intervals import wilson
from results.store import ResultsStore


@dataclass(frozen=True)
class Tally:
    """Problems solved out of n, and what the calls behind them cost (None: a price unknown)."""

    label: str
    solved: int
    n: int
    cost_usd: float | None

    def text(self) -> str:
        low, high = wilson(self.solved, self.n)
        rate = f"{self.solved}/{self.n} {self.solved / self.n:.3f} [{low:.3f}, {high:.3f}]" if self.n else "-"
        if self.cost_usd is None:
            return f"{self.label} {rate}, cost unknown"
        per = f"${self.cost_usd / self.solved:.4f} per solved" if self.solved else "none solved"
        return f"{self.label} {rate}, ${self.cost_usd:.4f} ({per})"


@dataclass(frozen=True)
class MixtureRow:
    run: str
    rule: str
    dataset: str
    mixture: Tally
    best: Tally
    oracle: Tally

    def line(self) -> str:
        return (
            f"{self.run} ({self.rule}) on {self.dataset}: {self.mixture.text()}; best member "
            f"{self.best.text()}; {self.oracle.text()}"
        )


def _total(costs: list[float | None]) -> float | None:
    return None if None in costs else round(sum(c or 0.0 for c in costs), 6)


@dataclass(frozen=True)
class MemberOutcome:
    """One member's answer to a problem: its label (strategy and model), the run that answered, whether
    it solved it and what it cost."""

    label: str
    run: str
    solved: bool
    cost_usd: float | None


@dataclass(frozen=True)
class Outcome:
    """One problem of a mixture: whether it solved it, what the calls it used cost, and each member's
    answer, in the members' order."""

    solved: bool
    cost_usd: float | None
    members: list[MemberOutcome]


def mixture_rows(store: ResultsStore, run_ids: list[str]) -> list[MixtureRow]:
    """One row per mixture run among `run_ids` (of classification answers, or of stated rules once it
    and its members are judged)."""
    rows = []
    for run_id in run_ids:
        config = store.run_config(run_id)
        if config["strategy"] == "mixture":
            outcomes = _voted(store, run_id)
            rule = f"{config['strategy_options'].get('rule', 'vote')} of"
        elif config["strategy"] == "mixture-rules":
            outcomes = _judged(store, run_id)
            rule = "agreement of"
        else:
            continue
        if outcomes:
            rows.append(_row(run_id, rule, str(config["dataset"]), outcomes))
    return rows


def _row(run_id: str, rule: str, dataset: str, outcomes: list[Outcome]) -> MixtureRow:
    """The mixture, its best member (most solved, the first named among equals) and the oracle. A
    member is its place in the mixture, never its label: two members of one strategy and model (other
    options, another run) are told apart by their run, not added together."""
    labels = member_labels(outcomes[0].members)
    solved_by = [sum(outcome.members[place].solved for outcome in outcomes) for place in range(len(labels))]
    costs = [[outcome.members[place].cost_usd for outcome in outcomes] for place in range(len(labels))]
    best = max(range(len(labels)), key=lambda place: (solved_by[place], -place))
    n = len(outcomes)
    oracle = sum(any(member.solved for member in outcome.members) for outcome in outcomes)
    return MixtureRow(
        run=run_id,
        rule=f"{rule} {len(labels)}",
        dataset=dataset,
        mixture=Tally("mixture", sum(o.solved for o in outcomes), n, _total([o.cost_usd for o in outcomes])),
        best=Tally(labels[best], solved_by[best], n, _total(costs[best])),
        oracle=Tally("any member", oracle, n, _total([cost for member in costs for cost in member])),
    )


def member_labels(members: list[MemberOutcome]) -> list[str]:
    """Each member's label, with its run where another member has the same strategy and model."""
    shared = {member.label for member in members if [m.label for m in members].count(member.label) > 1}
    return [f"{m.label} ({m.run})" if m.label in shared else m.label for m in members]


def _voted(store: ResultsStore, run_id: str) -> list[Outcome]:
    """A mixture of classification answers: each member's answer scored as it was stored; the
    mixture's cost is what the members it consulted cost."""
    return [
        Outcome(
            bool(answer.correct),
            answer.details["members_cost_usd"],
            [
                MemberOutcome(m["label"], m["run"], bool(m["correct"]), m["cost_usd"])
                for m in answer.details["members"]
            ],
        )
        for _, _, answer in store.answer_records(run_id)
    ]


def _judged(store: ResultsStore, run_id: str) -> list[Outcome]:
    """A mixture of stated rules: solved is what the counted judging of each run decided (the
    mixture's and each member's on the same problem), every member's cost its own; none until all of
    them are judged there."""
    outcomes = []
    for problem, attempt, answer in store.answer_records(run_id):
        decided = store.item_decision(run_id, problem, attempt)
        stored = answer.details["members"]
        verdicts = [_member_decision(store, member["run"], problem, attempt) for member in stored]
        if decided is None or None in verdicts:
            return []
        costs = [member.get("cost_usd") for member in stored]
        members = [
            MemberOutcome(m["label"], m["run"], bool(ok), cost)
            for m, ok, cost in zip(stored, verdicts, costs, strict=True)
        ]
        outcomes.append(Outcome(decided[0], _total(costs), members))
    return outcomes


def _member_decision(store: ResultsStore, run: str, problem: str, attempt: int) -> bool | None:
    """The member run's counted judging on the problem (its attempt, else its first); None: not judged."""
    decided = store.item_decision(run, problem, attempt) or store.item_decision(run, problem, 0)
    return None if decided is None else decided[0]
