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
from typing import Any

from datasets_io.intervals import wilson
from datasets_io.store import ResultsStore


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


def mixture_rows(store: ResultsStore, run_ids: list[str]) -> list[MixtureRow]:
    """One row per mixture run among `run_ids` (of classification answers, or of stated rules once it
    and its members are judged)."""
    rows = []
    for run_id in run_ids:
        config = store.run_config(run_id)
        if config["strategy"] == "mixture-rules":
            rows += _judged_row(store, run_id, config)
            continue
        if config["strategy"] != "mixture":
            continue
        answers = [answer for _, _, answer in store.answer_records(run_id)]
        if not answers:
            continue
        members = [member["label"] for member in answers[0].details["members"]]
        solved_by = {label: 0 for label in members}
        costs: dict[str, list[float | None]] = {label: [] for label in members}
        consulted_costs: list[float | None] = []
        oracle = 0
        for answer in answers:
            stored = answer.details["members"]
            for member in stored:
                solved_by[member["label"]] += bool(member["correct"])
                costs[member["label"]].append(member["cost_usd"])
            oracle += any(member["correct"] for member in stored)
            consulted_costs.append(answer.details["members_cost_usd"])
        best = max(members, key=lambda label: solved_by[label])  # the first named among equals
        n = len(answers)
        rule = f"{config['strategy_options'].get('rule', 'vote')} of {len(members)}"
        rows.append(
            MixtureRow(
                run=run_id,
                rule=rule,
                dataset=str(config["dataset"]),
                mixture=Tally("mixture", sum(bool(a.correct) for a in answers), n, _total(consulted_costs)),
                best=Tally(best, solved_by[best], n, _total(costs[best])),
                oracle=Tally("any member", oracle, n, _total([c for label in members for c in costs[label]])),
            )
        )
    return rows


def _judged_row(store: ResultsStore, run_id: str, config: dict[str, Any]) -> list[MixtureRow]:
    """A mixture of stated rules: solved is what the latest judging of each run decided (the mixture's
    and each member's on the same problem); no row until all of them are judged there."""
    records = list(store.answer_records(run_id))
    if not records:
        return []
    members = [member["label"] for member in records[0][2].details["members"]]
    solved_by = dict.fromkeys(members, 0)
    costs: dict[str, list[float | None]] = {label: [] for label in members}
    mixture = oracle = 0
    for problem, attempt, answer in records:
        decided = store.item_decision(run_id, problem, attempt)
        stored = answer.details["members"]
        verdicts = [_member_decision(store, member["run"], problem, attempt) for member in stored]
        if decided is None or None in verdicts:
            return []
        mixture += decided[0]
        for member, ok in zip(stored, verdicts, strict=True):
            solved_by[member["label"]] += bool(ok)
            costs[member["label"]].append(member.get("cost_usd"))
        oracle += any(verdicts)
    n = len(records)
    every = _total([cost for label in members for cost in costs[label]])
    best = max(members, key=lambda label: solved_by[label])
    return [
        MixtureRow(
            run=run_id,
            rule=f"agreement of {len(members)}",
            dataset=str(config["dataset"]),
            mixture=Tally("mixture", mixture, n, every),
            best=Tally(best, solved_by[best], n, _total(costs[best])),
            oracle=Tally("any member", oracle, n, every),
        )
    ]


def _member_decision(store: ResultsStore, run: str, problem: str, attempt: int) -> bool | None:
    """The member run's latest judging on the problem (its attempt, else its first); None: not judged."""
    decided = store.item_decision(run, problem, attempt) or store.item_decision(run, problem, 0)
    return None if decided is None else decided[0]
