"""A participant's answer: read from the page's form, kept as given, and scored by the task's own
strategy scoring, so a person's item reads like a model's (and a free-form one is judged like one).

"I don't know" and an answer after the time limit are kept as given and score as unsolved: an
exactly scored item is wrong, a free-form one says so in its text for the judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.call import AgentReply
from datasets_io.errors import BongardError
from datasets_io.problem import Side
from datasets_io.records import Answer, AnswerParts, CallTrace
from graphs.nodes import free_answer, label_answer
from graphs.strategies.case_study_binary import sides_answer
from graphs.strategies.wonderland import PanelVerdict, probe_answer
from graphs.studies.questions import CALL_TASKS, Question

DONT_KNOW = "dont_know"
SIDES: tuple[Side, ...] = ("left", "right")
NO_ANSWER = "I don't know."
LATE = "No answer within the time limit."


class IncompleteAnswer(BongardError):
    """A form sent with a part of the answer missing: nothing is kept, the page says what to fill in."""


def read_form(question: Question, form: Mapping[str, str]) -> dict[str, Any]:
    """The answer as given on the page, checked complete: "I don't know", or every part the task
    asks for (both rules, each test image's side, one candidate, each panel's concept)."""
    if form.get(DONT_KNOW):
        return {DONT_KNOW: True}
    if question.task == "images-to-sides":
        return {"sides": _chosen(form, "side", question.tests, SIDES, "put each test image on a side")}
    if question.task == "concept-selection":
        labels = tuple(str(c.label) for c in question.candidates)
        return {"label": int(_chosen(form, "label", ("",), labels, "pick one pair of rules")[""])}
    if question.task == "concept-probe":
        given = _chosen(form, "concept", question.shown_panels, ("1", "2"), "choose a concept for each image")
        return {"concepts": {ref: int(choice) for ref, choice in given.items()}}
    rules: dict[str, Any] = {side: " ".join(form.get(side, "").split()) for side in SIDES}
    if not all(rules.values()):
        raise IncompleteAnswer('write a rule for each side, or choose "I don\'t know"')
    return rules


def _chosen(
    form: Mapping[str, str], name: str, keys: tuple[str, ...], allowed: tuple[str, ...], missing: str
) -> dict[str, str]:
    """For each key, the field `name:PLACE` (its place on the page: a field never names a panel's
    side), or `name` alone for the key ""; each one of `allowed`."""
    fields = {key: form.get(f"{name}:{place}" if key else name, "") for place, key in enumerate(keys)}
    if not all(value in allowed for value in fields.values()):
        raise IncompleteAnswer(f'{missing}, or choose "I don\'t know"')
    return fields


def scored_answer(
    question: Question, given: Mapping[str, Any], agent: str, seconds: float, over_time: bool
) -> Answer:
    """The participant's item: the task's scoring of what was given, traced as one call of `agent`
    that took `seconds` and cost nothing."""
    unanswered = over_time or bool(given.get(DONT_KNOW))
    text = (LATE if over_time else NO_ANSWER) if unanswered else _answer_text(question, given)
    reply = AgentReply(agent=agent, text=text, parsed=None if unanswered else dict(given), parse_status="ok")
    parts = _scored(question, {} if unanswered else given, reply).model_copy(update={"text": text})
    details = {**parts.details, "study": {"dont_know": bool(given.get(DONT_KNOW)), "over_time": over_time}}
    trace = CallTrace(
        role="reasoner",
        agent=agent,
        task=CALL_TASKS[question.task],
        conversation="study",
        step=0,
        images=question.images,
        prompt=question.text,
        reply=text,
        parsed=reply.parsed,
        parse_status="ok",
        cost_usd=0.0,
        latency_s=seconds,
    )
    return Answer(
        **parts.model_dump(exclude={"details"}),
        details=details,
        strategy=question.task,
        problem=question.problem.key,
        trace=[trace],
    )


def _scored(question: Question, given: Mapping[str, Any], reply: AgentReply) -> AnswerParts:
    if question.task == "images-to-sides":
        sides = given.get("sides", {})
        tests = [question.panel(ref) for ref in question.tests]
        return sides_answer(tests, [sides.get(ref) for ref in question.tests], reply)
    if question.task == "concept-selection":
        return label_answer(reply, "label", question.inputs["label"])
    if question.task == "concept-probe":
        concepts = given.get("concepts", {})
        verdicts: list[PanelVerdict] = [
            {
                "ref": ref,
                "side": question.panel(ref).side,
                "given": SIDES[concepts[ref] - 1] if ref in concepts else None,
                "text": f"concept {concepts[ref]}" if ref in concepts else "",
                "parse_error": None,
            }
            for ref in question.shown_panels
        ]
        return probe_answer(
            verdicts, {"text": question.text, "author": "the study: the true concepts as stated"}
        )
    if not given:
        return AnswerParts(text=reply.text, parse_status="ok")
    return free_answer(reply)


def _answer_text(question: Question, given: Mapping[str, Any]) -> str:
    """What was given, in the words a model's reply would use (free-form: `Left:`/`Right:` lines)."""
    if question.task == "images-to-sides":
        return "\n".join(f"{ref}: {side}" for ref, side in given["sides"].items())
    if question.task == "concept-selection":
        return f"label {given['label']}"
    if question.task == "concept-probe":
        return "\n".join(f"{ref}: concept {choice}" for ref, choice in given["concepts"].items())
    return f"Left: {given['left']}\nRight: {given['right']}"
