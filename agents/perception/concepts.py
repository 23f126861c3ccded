"""Calls about worded concepts: probe (which of two concepts a panel fits), select (which option is the
problem's concept) and hypothesize (candidate concepts, which the agent can word as its own rules).

The agent cannot read worded concepts, so probe and select are guesses by word
overlap with its own words for the panels, and say so. Hypotheses are the rules
its search finds, best first.
"""

from __future__ import annotations

from typing import Any

from agents.call import CallSpec
from agents.perception.features import perceive
from agents.perception.panels import PerceptionError, both_sides, call_panels, induce, shown_panel
from agents.perception.rules import candidate_rules
from agents.perception.sentences import describe
from agents.perception.wording import closest

HYPOTHESES = 20
GUESS = "A guess by word overlap: the perception agent measures drawings and cannot read worded concepts"


def _overlap_report(shared: list[list[str]], names: list[str]) -> str:
    """Which candidates share which words; those sharing none are only counted (a select call has dozens)."""
    said = [
        f"{name} shares {len(words)} word{'s' if len(words) != 1 else ''} ({', '.join(words)})"
        for name, words in zip(names, shared, strict=True)
        if words
    ]
    rest = sum(1 for words in shared if not words)
    if rest:
        said.append(f"the other {rest} share no word" if said else f"none of the {rest} shares a word")
    return "; ".join(said)


def probe(call: CallSpec) -> tuple[dict[str, Any], str]:
    """Concept 1 or 2, whichever shares more words with the panel's description (ties: 1)."""
    concepts = [str(concept) for concept in call.extra.get("concepts", [])]
    if len(concepts) != 2:
        raise PerceptionError("a probe call needs extra['concepts'] with the two concepts")
    description = describe(perceive(shown_panel(call).path))
    best, shared = closest(description, concepts)
    reasoning = (
        f"{GUESS}. Its description of the panel ({description}) against the concepts: "
        f"{_overlap_report(shared, ['concept 1', 'concept 2'])}."
    )
    return {"reasoning": reasoning, "concept": best + 1}, reasoning


def _choices(call: CallSpec) -> list[tuple[int, str, str]]:
    """The numbered concept pairs a select call offers: Bongard in Wonderland's `options` (by `id`)
    or Bongard-RWR+'s `candidates` (by `label`), in number order."""
    options = [(int(o["id"]), o["left"], o["right"]) for o in call.extra.get("options", [])]
    candidates = [(int(c["label"]), c["left"], c["right"]) for c in call.extra.get("candidates", [])]
    if not options and not candidates:
        raise PerceptionError(
            "a select call needs extra['options'] ([{'id', 'left', 'right'}, ...]) or extra['candidates'] "
            "([{'label', 'left', 'right'}, ...])"
        )
    return sorted(options or candidates)


def select(call: CallSpec) -> tuple[dict[str, Any], str]:
    """The option whose words overlap most with the induced rule (no rule: the panels' descriptions)."""
    choices = _choices(call)
    _, rule = induce(call)
    if rule is not None:
        said = rule.sentences()
        source, reference = "the induced rule", f"{said['left']} {said['right']}"
    else:
        source = "the panels' descriptions (no rule separates the sides)"
        reference = " ".join(describe(perceive(panel.path)) for panel in call_panels(call))
    best, shared = closest(reference, [f"{left} {right}" for _, left, right in choices])
    chosen = choices[best][0]
    names = [f"option {number}" for number, _, _ in choices]
    analysis = f"{GUESS}. Compared with {source}: {_overlap_report(shared, names)}. Chosen: option {chosen}."
    if rule is not None:
        analysis += f" The induced rule: {rule.text().replace(chr(10), '; ')}."
    return {"analysis": analysis, "explanation": analysis, "option": chosen, "label": chosen}, analysis


def hypothesize(call: CallSpec) -> tuple[dict[str, Any], str]:
    """Up to `extra["count"]` rules from the rule search, best first, as (left, right) sentences."""
    count = int(call.extra.get("count", HYPOTHESES))
    rows = both_sides(call)
    rules = candidate_rules(rows.side("left"), rows.side("right"), count)
    hypotheses = [{"set_a_rule": r.sentences()["left"], "set_b_rule": r.sentences()["right"]} for r in rules]
    analysis = (
        f"{len(hypotheses)} threshold rules on the measured features, best first: exact single conditions, "
        "exact pairs of conditions, then single conditions wrong on 1 or 2 context panels."
    )
    return {"hypotheses": hypotheses, "analysis": analysis}, analysis
