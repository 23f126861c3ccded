"""What a call shows the agent: its panels, their measurements by side, and the rule they induce.

Context panels come from the call's images (a sheet's twelve included) and from
the `perception-features:` lines of earlier replies passed as `extra["notes"]`,
so a text-only call still knows the panels; a test panel's line holds its
measurements and its sentence, never its side. The sides of test panels are never read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agents.call import CallSpec
from agents.machine_notes import FEATURES_MARK
from agents.perception.features import perceive
from agents.perception.rules import Row, Rule, Side, induce_rule
from agents.perception.sentences import describe
from agents.perception.table import COLUMNS, panel_row
from datasets_io.errors import BongardError
from datasets_io.problem import Panel


class PerceptionError(BongardError, ValueError):
    """A call the perception agent cannot answer (a task kind it has no way to do, missing panels).
    It is deterministic: the same call fails the same way, so no retry or resume is offered for it."""

    retryable = False


@dataclass(frozen=True)
class MeasuredTest:
    """A test panel as a note gives it: its measurements and its sentence, no side."""

    row: Row
    said: str


class PanelRows:
    """The context panels' feature rows by side, gathered from a call's images and notes, and the
    test panels the notes measured."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[Side, Row]] = {}
        self.tests: dict[str, MeasuredTest] = {}

    def add_panel(self, panel: Panel) -> None:
        if panel.role == "context" and panel.side in ("left", "right"):
            self.rows[panel.ref] = (panel.side, panel_row(perceive(panel.path)))

    def add_notes(self, notes: Iterable[Mapping[str, Any]]) -> None:
        for note in notes:
            for line in str(note.get("text", "")).splitlines():
                if line.startswith(FEATURES_MARK):
                    for ref, entry in json.loads(line.removeprefix(FEATURES_MARK)).items():
                        if entry["side"] is None:
                            self.tests.setdefault(ref, MeasuredTest(entry["row"], entry["said"]))
                        else:
                            self.rows.setdefault(ref, (entry["side"], entry["row"]))

    def side(self, side: Side) -> list[Row]:
        return [row for ref, (s, row) in sorted(self.rows.items()) if s == side]


def call_panels(call: CallSpec) -> list[Panel]:
    """Every panel behind the call's images, once each, in order."""
    seen: dict[str, Panel] = {}
    for image in call.images:
        for panel in image.panels:
            seen.setdefault(panel.ref, panel)
    return list(seen.values())


def shown_panel(call: CallSpec) -> Panel:
    """The one panel of a call about a single panel image (its last image)."""
    if not call.images or len(call.images[-1].panels) != 1:
        raise PerceptionError(f"a {call.task} call with a schema takes one panel image")
    return call.images[-1].panels[0]


def features_line(panels: Iterable[Panel]) -> str:
    """The machine note of `panels`: each context panel's side and row; each test panel's row and
    sentence with side null, so a text-only call can decide it without ever being told its side."""
    entries: dict[str, dict[str, Any]] = {}
    for panel in panels:
        perception = perceive(panel.path)
        if panel.role == "context":
            entries[panel.ref] = {"side": panel.side, "row": panel_row(perception)}
        else:
            entries[panel.ref] = {"side": None, "row": panel_row(perception), "said": describe(perception)}
    return FEATURES_MARK + json.dumps(entries, sort_keys=True)


def context_rows(call: CallSpec) -> PanelRows:
    rows = PanelRows()
    for panel in call_panels(call):
        rows.add_panel(panel)
    rows.add_notes(call.extra.get("notes", []))
    return rows


def both_sides(call: CallSpec) -> PanelRows:
    """The context panels' rows, which must include both sides."""
    rows = context_rows(call)
    if not rows.side("left") or not rows.side("right"):
        raise PerceptionError("the call shows no context panels of both sides, in its images or its notes")
    return rows


def induce(call: CallSpec) -> tuple[PanelRows, Rule | None]:
    """The context panels' rows and the rule they induce (None when no rule separates them)."""
    rows = both_sides(call)
    return rows, induce_rule(rows.side("left"), rows.side("right"))


def caveat(rule: Rule) -> str:
    """The warning a rule with exceptions carries (empty for an exact rule)."""
    if not rule.exceptions:
        return ""
    return f"(The rule is wrong on {rule.exceptions} of the context panels; no exact rule was found.)\n"


def measured(rows: PanelRows, rule: Rule | None) -> str:
    """What the agent measured and how far its rule holds, said plainly."""
    left, right = len(rows.side("left")), len(rows.side("right"))
    done = (
        f"I measured {left + right} context panels ({left} left, {right} right) in {len(COLUMNS)} features "
        "and searched threshold rules of one or two conditions."
    )
    if rule is None:
        return f"{done} No rule of up to two conditions separates the sides."
    return f"{done} {caveat(rule).strip() or 'The rule holds on every context panel.'}"
