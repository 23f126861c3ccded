"""Classify calls: which side each test panel belongs to, by a rule induced here or one given in words.

With context panels the agent induces its rule from them (or, with none that
separates the sides, guesses the nearer side by feature distance). Without
context panels but with `extra["rule_summary"]` it applies that summary, which it
can read only when written in its own words (a stage-1 reply of its own). Left
is the positive side.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.call import CallSpec
from agents.perception.features import perceive
from agents.perception.panels import PerceptionError, call_panels, caveat, context_rows, induce
from agents.perception.rules import Row, Rule, Side, nearest_side
from agents.perception.sentences import describe
from agents.perception.table import panel_row
from agents.perception.wording import read_rule
from agents.schema_fill import decisions_reply, side_decision

Judge = Callable[[Row], tuple[Side, str, str]]
"""A test panel's row -> its side, the explanation and the rule as one line."""


def _by_rule(rule: Rule, how: str, warning: str) -> Judge:
    said = rule.sentences()
    concept = f"Left: {said['left']}; Right: {said['right']}"

    def judge(row: Row) -> tuple[Side, str, str]:
        side = rule.side_of(row)
        return side, f"{how}: {said[side]}. {warning}".strip(), concept

    return judge


def _judge(call: CallSpec) -> Judge:
    summary = call.extra.get("rule_summary")
    if summary is not None and not context_rows(call).rows:
        rule = read_rule(str(summary))
        if rule is None:
            raise PerceptionError(
                "the perception agent can apply only rules in its own wording (such as "
                f"'the number of figures is at most 2'), and the rule summary has none: {summary!r}"
            )
        return _by_rule(rule, "By the given rule, read back in the agent's own wording", "")
    rows, induced = induce(call)
    if induced is not None:
        return _by_rule(induced, "By the induced rule", caveat(induced))
    left, right = rows.side("left"), rows.side("right")

    def guess(row: Row) -> tuple[Side, str, str]:
        side = nearest_side(left, right, row)
        explanation = f"A guess: no rule separates the sides; the nearest panels by features are {side}."
        return side, explanation, "no separating rule found"

    return guess


def decisions(call: CallSpec) -> list[dict[str, str]]:
    """One decision per test panel in `extra["test_panels"]`, under every name a schema may ask for."""
    judge = _judge(call)
    panels = {panel.ref: panel for panel in call_panels(call)}
    found = []
    for ref in call.extra.get("test_panels", []):
        if ref not in panels:
            raise PerceptionError(f"test panel {ref} is not among the call's images")
        perception = perceive(panels[ref].path)
        side, explanation, concept = judge(panel_row(perception))
        found.append(side_decision(side, explanation, concept, describe(perception)))
    if not found:
        raise PerceptionError("a classify call names no test panels (extra['test_panels'])")
    return found


def classify_reply(call: CallSpec) -> str:
    """The decisions in the call's schema: one decision's fields, or one object per test panel."""
    return decisions_reply(call, decisions(call))
