"""The perception agent: a LangChain chat model that answers from the call's metadata, not its prompt.

It reads the `CallSpec` of each call: the task kind, the output schema and the
panels behind every image (a sheet's twelve included). It perceives each panel
itself (`features.py`) and answers:

- describe: the panel in sentences, then its measurements as JSON; with a schema
  (a componential description of one panel), the schema filled honestly: line
  drawings in black and white, one object per figure, nothing living, no weather;
  a drawing prompt (`positive`) names its figures, and it leaves `negative` empty;
  the JSON is followed by the panel's measurements, which its parse leaves out;
- compare: what differs between the two panels of a pair, then both panels' JSON;
- answer: the simplest induced rule (exact if one exists, else said not to be),
  as `Left: ...` / `Right: ...` lines; with a
  schema, the rule, a one-line summary of the left (positive) side and what was measured;
- classify: the test images' sides by separability (`separability.py`), two
  test images the call says belong to different sides one on each, with the
  induced rule as the explanation; with no context panels, the rule of
  `extra["rule_summary"]` applied, if it is in the agent's own wording
  (deductive rule application);
- probe: which of two worded concepts fits a panel, a guess by word overlap with
  its description of the panel;
- select: which worded option is the problem's concept, a guess by word overlap
  with the induced rule;
- hypothesize: up to `extra["count"]` rules from the rule search, best first;
- ground: a panel's measurements as named symbols; propose: its rule search's next rule over the
  symbols a call gives, as a program of the rule language (`programs.py`).

Anything else (generate, judge, chat) raises `PerceptionError`: it measures
drawings and cannot read or write worded concepts.

Every free-text reply and every structured description ends with a
`perception-features:` line holding the measurements of every panel the call
showed, keyed by panel. A later text-only call gets earlier replies as
`extra["notes"]` and reads the panels from those lines, so `descriptive`,
`contrastive`, `componential-analysis` and `symbolic-rule-learning` work with
the agent on both roles. A reply for a call with an output schema is one JSON object valid
against it (`structured.py`). The sides of test panels are never looked at.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agents.call import CallSpec, schema_json
from agents.machine_notes import FEATURES_MARK
from agents.perception import concepts, programs
from agents.perception.classify import classify_reply
from agents.perception.features import perceive
from agents.perception.panels import (
    PerceptionError,
    call_panels,
    caveat,
    features_line,
    induce,
    measured,
    shown_panel,
)
from agents.perception.sentences import describe, differences, figure_sentence, figures_phrase
from agents.perception.wording import compact
from agents.schema_fill import fill

__all__ = ["FEATURES_MARK", "PerceptionChatModel", "PerceptionError", "perception_reply"]

SUMMARY_WORDS = 20
NO_RULE = "No rule was found: no rule of up to two conditions on the measured features separates the sides."


def _structured(call: CallSpec, known: dict[str, Any], explanation: str) -> str:
    """The known values in the call's schema, or as they are when the call has none."""
    if call.output_schema is None:
        return json.dumps(known)
    return json.dumps(fill(schema_json(call.output_schema), known, explanation))


def _describe_reply(call: CallSpec) -> str:
    panels = call_panels(call)
    if not panels:
        raise PerceptionError("a describe call with no image")
    if call.output_schema is None:
        text = "\n".join(describe(perceive(panel.path)) for panel in call.images[-1].panels)
        return f"{text}\n{features_line(panels)}"
    panel = shown_panel(call)
    perception = perceive(panel.path)
    text = describe(perception)
    fills = {"solid black fill": any(f.filled for f in perception.figures)}
    fills["thin black lines"] = any(not f.filled for f in perception.figures)
    known = {
        "scene": "a white panel with black line drawings (a Bongard problem panel)",
        "living_beings": [],
        "inanimate_objects": [figure_sentence(n, f) for n, f in enumerate(perception.figures, 1)],
        "activities": [],
        "time_of_day": "not applicable",
        "weather": "not applicable",
        "dominant_colors": ["black", "white"],
        "textures": [name for name, present in fills.items() if present],
        "emotional_tone": "not applicable (the perception agent measures shapes)",
        "visible_text": "not read (the perception agent does not read text)",
        "summary": text,
        "positive": figures_phrase(perception),
        "negative": "",  # it measures figures; what would show the other concept is beyond it
    }
    return f"{_structured(call, known, text)}\n{features_line([panel])}"  # parsed without its note


def _compare_reply(call: CallSpec) -> str:
    if len(call.images) < 2:
        raise PerceptionError("a compare call needs two images")
    first, second = call.images[-2].panels[0], call.images[-1].panels[0]
    text = differences(perceive(first.path), perceive(second.path))
    return f"{text}\n{features_line(call_panels(call))}"


def _summary(sentence: str) -> str:
    """The left side's sentence as a summary, without the "the"s when that brings it within the word limit."""
    summary = f"Positive images: {sentence}"
    return summary if len(summary.split()) <= SUMMARY_WORDS else f"Positive images: {compact(sentence)}"


def _answer_reply(call: CallSpec) -> str:
    rows, rule = induce(call)
    if call.output_schema is None:
        if rule is None:
            return (
                "No rule of up to two conditions on the measured features holds on every panel of one side "
                f"and no panel of the other ({len(rows.rows)} panels measured).\n"
                + features_line(call_panels(call))
            )
        return f"{rule.text()}\n{caveat(rule)}{features_line(call_panels(call))}"
    analysis = measured(rows, rule)
    if rule is None:
        known = {
            "rule": NO_RULE,
            "summary": f"Positive images: {NO_RULE}",
            **dict.fromkeys(("set_a_rule", "set_b_rule", "left_concept", "right_concept"), NO_RULE),
        }
    else:
        said = rule.sentences()
        known = {
            "rule": rule.text(),
            "summary": _summary(said["left"]),
            "set_a_rule": said["left"],
            "set_b_rule": said["right"],
            "left_concept": said["left"],
            "right_concept": said["right"],
        }
    return _structured(call, {**known, "analysis": analysis}, analysis)


def _worded(task: Callable[[CallSpec], tuple[dict[str, Any], str]]) -> Callable[[CallSpec], str]:
    """A worded-concept task's values and explanation as a reply in the call's schema."""

    def reply(call: CallSpec) -> str:
        known, explanation = task(call)
        return _structured(call, known, explanation)

    return reply


REPLIES: dict[str, Callable[[CallSpec], str]] = {
    "describe": _describe_reply,
    "compare": _compare_reply,
    "answer": _answer_reply,
    "classify": classify_reply,
    "probe": _worded(concepts.probe),
    "select": _worded(concepts.select),
    "hypothesize": _worded(concepts.hypothesize),
    "ground": lambda call: json.dumps(programs.grounded(call)),  # exactly the schema's fields: a
    "propose": lambda call: json.dumps(programs.proposed(call)),  # fill would empty the free-form map
}


def perception_reply(call: CallSpec) -> str:
    reply = REPLIES.get(call.task)
    if reply is None:
        raise PerceptionError(
            f"the perception agent cannot do {call.task!r} calls (it does {', '.join(REPLIES)}): "
            "it measures drawings and cannot read or write worded concepts"
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
