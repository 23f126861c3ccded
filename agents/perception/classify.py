"""Classify calls: which side each test panel belongs to.

With context panels the sides are decided by separability (`separability.py`):
two test panels the call says belong to different sides (`extra["opposite_sides"]`,
as images-to-sides says) go the way that leaves the sides most separable, one
on each side; any other test panel goes to the side it leaves more separable.
The induced rule, the simplest exact one, is stated as the explanation, with
where it would put the panel; when there is none, the reply says so. Without
context panels but with `extra["rule_summary"]` the agent applies that summary,
which it can read only when written in its own words (a stage-1 reply of its
own). Left is the positive side. The sides of test panels are never read.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.call import CallSpec
from agents.perception.features import perceive
from agents.perception.panels import (
    MeasuredTest,
    PanelRows,
    PerceptionError,
    call_panels,
    context_rows,
    induce,
)
from agents.perception.rules import Row, Rule, Side
from agents.perception.sentences import describe
from agents.perception.separability import Decision, pair_sides, single_side
from agents.perception.table import panel_row
from agents.perception.wording import read_rule
from agents.schema_fill import decisions_reply, side_decision

OPPOSITE_SIDES = "opposite_sides"
"""The `extra` key by which a call says its two test panels belong to different sides."""
NO_EXACT_RULE = "no exact rule found"


def _stated(rule: Rule) -> str:
    said = rule.sentences()
    return f"Left: {said['left']}; Right: {said['right']}"


def _rule_note(rule: Rule | None, row: Row) -> str:
    """What the induced rule says about this panel, or that there is no exact rule."""
    if rule is None:
        return "No rule of up to two conditions on the measured features separates the sides."
    if rule.exceptions:
        return (
            f"No exact rule of up to two conditions was found; the nearest, wrong on {rule.exceptions} "
            f"context panel(s), is {_stated(rule)}, and puts it {rule.side_of(row)}."
        )
    return f"The simplest exact rule is {_stated(rule)}; it puts this panel {rule.side_of(row)}."


def _how(decision: Decision, side: Side, paired: bool) -> str:
    if not decision.deciding:
        return f"A guess: every measure was indifferent, and the nearest context panel by features is {side}."
    measures = "; ".join(column.phrase for column in decision.deciding)
    if paired:
        return (
            f"The two test panels belong to different sides; this one goes {side}, the way round that leaves "
            f"the sides most separable (most in {measures})."
        )
    return f"It goes {side}, where it leaves the sides more separable (most in {measures})."


def _by_given_rule(summary: object, tests: Sequence[MeasuredTest]) -> list[dict[str, str]]:
    rule = read_rule(str(summary))
    if rule is None:
        raise PerceptionError(
            "the perception agent can apply only rules in its own wording (such as "
            f"'the number of figures is at most 2'), and the rule summary has none: {summary!r}"
        )
    said = rule.sentences()
    found = []
    for test in tests:
        side = rule.side_of(test.row)
        explanation = f"By the given rule, read back in the agent's own wording: {said[side]}."
        found.append(side_decision(side, explanation, _stated(rule), test.said))
    return found


def _tests(call: CallSpec) -> list[MeasuredTest]:
    """The test panels named in `extra["test_panels"]`: measured from the call's images, or, in a
    text-only call, as an earlier reply's note measured them."""
    refs = [str(ref) for ref in call.extra.get("test_panels", [])]
    if not refs:
        raise PerceptionError("a classify call names no test panels (extra['test_panels'])")
    shown = {panel.ref: panel for panel in call_panels(call)}
    notes = PanelRows()
    notes.add_notes(call.extra.get("notes", []))
    found = []
    for ref in refs:
        if ref in shown:
            perception = perceive(shown[ref].path)
            found.append(MeasuredTest(panel_row(perception), describe(perception)))
        elif ref in notes.tests:
            found.append(notes.tests[ref])
        else:
            raise PerceptionError(
                f"test panel {ref} is neither among the call's images nor measured in its notes (a text-only "
                "call needs the perception agent as the describer too)"
            )
    return found


def decisions(call: CallSpec) -> list[dict[str, str]]:
    """One decision per test panel in `extra["test_panels"]`, under every name a schema may ask for."""
    tests = _tests(call)
    summary = call.extra.get("rule_summary")
    if summary is not None and not context_rows(call).rows:
        return _by_given_rule(summary, tests)
    context, rule = induce(call)
    left, right = context.side("left"), context.side("right")
    rows = [test.row for test in tests]
    paired = len(rows) == 2 and bool(call.extra.get(OPPOSITE_SIDES))
    if paired:
        chosen = [pair_sides(left, right, rows[0], rows[1])] * 2
    else:
        chosen = [single_side(left, right, row) for row in rows]
    concept = _stated(rule) if rule is not None and not rule.exceptions else NO_EXACT_RULE
    found = []
    for index, (test, row, decision) in enumerate(zip(tests, rows, chosen, strict=True)):
        side = decision.sides[index if paired else 0]
        explanation = f"{_how(decision, side, paired)} {_rule_note(rule, row)}"
        found.append(side_decision(side, explanation, concept, test.said))
    return found


def classify_reply(call: CallSpec) -> str:
    """The decisions in the call's schema: one decision's fields, or one object per test panel."""
    return decisions_reply(call, decisions(call))
