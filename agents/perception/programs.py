"""The perception agent in the program strategies: its measurements as a panel's symbols (ground), and
its own rule search as a proposer that writes programs of the toolkit's rule language (propose).

A grounding call gets one panel: the reply is every column of its feature table by name, with the
phrase that says what each is. A proposing call names the context panels' symbols and sides in
`extra["symbols"]` and the programs already tried in `extra["tried"]`: the reply is the first rule of
the agent's search (`rules.candidate_rules`, simplest first, exact before inexact) not yet tried,
as a program (`figures <= 2 and not ...`) and in words. It reads the symbols it is given, so it
proposes from any grounder's symbols, not only its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.call import CallSpec
from agents.perception.features import perceive
from agents.perception.panels import PerceptionError, shown_panel
from agents.perception.rules import Rule, Side, candidate_rules
from agents.perception.table import COLUMNS, panel_row

PROPOSALS_LOOKED_AT = 5
"""Rules past those already tried that the search lists before the first untried one is taken."""


def grounded(call: CallSpec) -> dict[str, Any]:
    """The shown panel's symbols (its feature row) and what each one measures."""
    return {
        "symbols": panel_row(perceive(shown_panel(call).path)),
        "phrases": {column.name: column.phrase for column in COLUMNS},
    }


def program(rule: Rule) -> str:
    """A rule as a program that is true on the left side: its conditions joined, negated for a rule
    that holds on the right."""
    conditions = [
        f"{condition.column.name} {'>' if condition.above else '<='} {format(condition.threshold, '.10g')}"
        for condition in rule.conditions
    ]
    joined = " and ".join(conditions)
    if rule.side == "left":
        return joined
    return f"not ({joined})" if len(conditions) > 1 else f"not {joined}"


def proposed(call: CallSpec) -> dict[str, Any]:
    """The first rule of the agent's search over the given symbols that was not proposed before."""
    given = call.extra.get("symbols")
    if not isinstance(given, Mapping) or not given:
        raise PerceptionError("a propose call names no context panels' symbols (extra['symbols'])")
    rows: dict[Side, list[Mapping[str, float]]] = {"left": [], "right": []}
    for entry in given.values():
        rows["left" if entry["side"] == "left" else "right"].append(entry["symbols"])
    if not (rows["left"] and rows["right"]):
        raise PerceptionError("a propose call needs context panels of both sides")
    tried = set(call.extra.get("tried", []))
    rules = candidate_rules(rows["left"], rows["right"], len(tried) + PROPOSALS_LOOKED_AT)
    if not rules:
        return {"words": "no rule of up to two conditions separates the sides", "program": "true"}
    rule = next((r for r in rules if program(r) not in tried), rules[0])
    said = rule.sentences()
    return {"words": f"Left: {said['left']}; right: {said['right']}", "program": program(rule)}
