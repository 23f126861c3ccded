"""The perception agent: a LangChain chat model that answers from the call's metadata, not its prompt.

It reads the `CallSpec` of each call: the task kind, the output schema and the
panels behind every image (a sheet's twelve included). It perceives each panel
itself (`features.py`) and answers:

- describe: the panel in sentences, then its measurements as JSON;
- compare: what differs between the two panels of a pair, then both panels' JSON;
- answer: the simplest induced rule, as `Left: ...` / `Right: ...` lines;
- classify: the induced rule applied to the test images, in the call's schema;
  with no rule, the nearer side by feature distance, marked as a guess.

Every reply ends with a `perception-features:` line holding the measurements
of every panel the call showed, keyed by panel. A later text-only answer call
gets earlier replies as `extra["notes"]` and reads the panels from those lines,
so `descriptive` and `contrastive` work with the agent on both roles. The
sides of test panels are never looked at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agents.call import CallSpec, schema_json
from agents.perception.features import perceive
from agents.perception.rules import Row, Rule, Side, induce_rule, nearest_side
from agents.perception.sentences import describe, differences
from agents.perception.table import panel_row
from datasets_io.problem import Panel

FEATURES_MARK = "perception-features:"


class PerceptionError(ValueError):
    """A call the perception agent cannot answer (a task kind it has no way to do, missing panels)."""


class PanelRows:
    """The context panels' feature rows by side, gathered from a call's images and notes."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[Side, Row]] = {}

    def add_panel(self, panel: Panel) -> None:
        if panel.role == "context" and panel.side in ("left", "right"):
            self.rows[panel.ref] = (panel.side, panel_row(perceive(panel.path)))

    def add_notes(self, notes: Iterable[Mapping[str, Any]]) -> None:
        for note in notes:
            for line in str(note.get("text", "")).splitlines():
                if line.startswith(FEATURES_MARK):
                    for ref, entry in json.loads(line.removeprefix(FEATURES_MARK)).items():
                        self.rows.setdefault(ref, (entry["side"], entry["row"]))

    def side(self, side: Side) -> list[Row]:
        return [row for ref, (s, row) in sorted(self.rows.items()) if s == side]


def _panels(call: CallSpec) -> list[Panel]:
    seen: dict[str, Panel] = {}
    for image in call.images:
        for panel in image.panels:
            seen.setdefault(panel.ref, panel)
    return list(seen.values())


def _features_line(panels: Iterable[Panel]) -> str:
    entries = {
        p.ref: {"side": p.side, "row": panel_row(perceive(p.path))} for p in panels if p.role == "context"
    }
    return FEATURES_MARK + json.dumps(entries, sort_keys=True)


def _induce(call: CallSpec) -> tuple[PanelRows, Rule | None]:
    rows = PanelRows()
    for panel in _panels(call):
        rows.add_panel(panel)
    rows.add_notes(call.extra.get("notes", []))
    left, right = rows.side("left"), rows.side("right")
    if not left or not right:
        raise PerceptionError("the call shows no context panels of both sides, in its images or its notes")
    return rows, induce_rule(left, right)


def _describe_reply(call: CallSpec) -> str:
    panels = _panels(call)
    if not panels:
        raise PerceptionError("a describe call with no image")
    shown = call.images[-1].panels
    text = "\n".join(describe(perceive(panel.path)) for panel in shown)
    return f"{text}\n{_features_line(panels)}"


def _compare_reply(call: CallSpec) -> str:
    if len(call.images) < 2:
        raise PerceptionError("a compare call needs two images")
    first, second = call.images[-2].panels[0], call.images[-1].panels[0]
    text = differences(perceive(first.path), perceive(second.path))
    return f"{text}\n{_features_line(_panels(call))}"


def _answer_reply(call: CallSpec) -> str:
    rows, rule = _induce(call)
    if rule is None:
        return (
            "No rule of up to two conditions on the measured features holds on every panel of one side "
            f"and no panel of the other ({len(rows.rows)} panels measured).\n{_features_line(_panels(call))}"
        )
    return f"{rule.text()}\n{_caveat(rule)}{_features_line(_panels(call))}"


def _caveat(rule: Rule) -> str:
    if not rule.exceptions:
        return ""
    return f"(The rule is wrong on {rule.exceptions} of the context panels; no exact rule was found.)\n"


def _decisions(call: CallSpec) -> list[dict[str, str]]:
    rows, rule = _induce(call)
    panels = {panel.ref: panel for panel in _panels(call)}
    decisions = []
    for ref in call.extra.get("test_panels", []):
        if ref not in panels:
            raise PerceptionError(f"test panel {ref} is not among the call's images")
        row = panel_row(perceive(panels[ref].path))
        if rule is not None:
            side = rule.side_of(row)
            said = rule.sentences()
            explanation = f"By the induced rule: {said[side]}. {_caveat(rule)}".strip()
            concept = f"Left: {said['left']}; Right: {said['right']}"
        else:
            side = nearest_side(rows.side("left"), rows.side("right"), row)
            explanation = f"A guess: no rule separates the sides; the nearest panels by features are {side}."
            concept = "no separating rule found"
        decisions.append({"answer": side.upper(), "explanation": explanation, "concept": concept})
    if not decisions:
        raise PerceptionError("a classify call names no test panels (extra['test_panels'])")
    return decisions


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: dict[str, Any] = schema["$defs"][ref.removeprefix("#/$defs/")]
        return resolved
    return node


def _fill(schema: dict[str, Any], node: dict[str, Any], decision: Mapping[str, str]) -> dict[str, Any]:
    properties = _resolve(schema, node).get("properties", {})
    return {key: decision.get(key, decision["explanation"]) for key in properties}


def _classify_reply(call: CallSpec) -> str:
    """The decisions in the call's schema: one object with an `answer`, or one such object per property."""
    decisions = _decisions(call)
    if call.output_schema is None:
        return "\n".join(f"{d['answer']}: {d['explanation']}" for d in decisions)
    schema = schema_json(call.output_schema)
    properties = schema.get("properties", {})
    if "answer" in properties:
        return json.dumps(_fill(schema, schema, decisions[0]))
    if len(properties) != len(decisions):
        raise PerceptionError(f"the schema has {len(properties)} fields for {len(decisions)} test panels")
    return json.dumps(
        {key: _fill(schema, node, d) for (key, node), d in zip(properties.items(), decisions, strict=True)}
    )


REPLIES = {
    "describe": _describe_reply,
    "compare": _compare_reply,
    "answer": _answer_reply,
    "classify": _classify_reply,
}


def perception_reply(call: CallSpec) -> str:
    reply = REPLIES.get(call.task)
    if reply is None:
        raise PerceptionError(
            f"the perception agent cannot do {call.task!r} calls (it does {', '.join(REPLIES)}): "
            "it measures drawings and cannot read worded concepts"
        )
    return reply(call)


class PerceptionChatModel(BaseChatModel):
    """The perception agent as a LangChain chat model (it needs the `CallSpec` the managed agent passes)."""

    @property
    def _llm_type(self) -> str:
        return "perception"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        call = kwargs.get("call")
        if not isinstance(call, CallSpec):
            raise PerceptionError("the perception agent answers calls that carry a CallSpec, not bare chat")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=perception_reply(call)))])
