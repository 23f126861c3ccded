"""Words in and out: reading the agent's own rule sentences back, and word overlap for worded concepts.

The agent cannot read worded concepts. Two things it can still do honestly: read
back a rule it wrote itself (`Condition.words()`: "<column phrase> is at least 2",
"... is above 0.31"), so a stage-2 call applies a stage-1 summary; and count the
words two texts share, which is all its guesses among worded concepts rest on.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from agents.perception.rules import Condition, Rule, Side, other
from agents.perception.table import COLUMNS

_NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
_BY_PHRASE = {column.phrase.removeprefix("the ").lower(): column for column in COLUMNS}
_CONDITION = re.compile(
    r"\b(?:the\s+)?(?P<phrase>"
    + "|".join(re.escape(phrase) for phrase in sorted(_BY_PHRASE, key=len, reverse=True))
    + rf")\s+is\s+(?P<bound>at least|at most|above)\s+(?P<number>{_NUMBER})",
    re.IGNORECASE,
)
_OR = re.compile(r"\bor\b", re.IGNORECASE)

_STOP = "a an and are as at be by for from has have in is it its of on or than that the there this to with"
STOP_WORDS = frozenset(_STOP.split())


def _condition(match: re.Match[str]) -> Condition:
    """The condition a sentence states, with a threshold that says it again in the same words."""
    column = _BY_PHRASE[match["phrase"].lower()]
    bound, number = match["bound"].lower(), float(match["number"])
    above = bound != "at most"
    if column.whole:
        number += -0.5 if above else 0.5  # "at least 2" is "> 1.5"; "at most 1" is "<= 1.5"
    return Condition(column, above, number, margin=0.0)


def read_rule(text: str, side: Side = "left") -> Rule | None:
    """The rule `text` states for `side`, or None when it holds no condition in the agent's wording.

    Conditions joined by "and" must all hold; joined by "or", any one. A rule holds
    on `side` when all its conditions do, so an "or" sentence becomes the other
    side's "and" of the negated conditions (as `Rule.sentences` says it).
    """
    matches = list(_CONDITION.finditer(text))
    if not matches:
        return None
    conditions = tuple(_condition(match) for match in matches)
    gaps = (text[a.end() : b.start()] for a, b in itertools.pairwise(matches))
    if any(_OR.search(gap) for gap in gaps):
        negated = tuple(Condition(c.column, not c.above, c.threshold, c.margin) for c in conditions)
        return Rule(other(side), negated)
    return Rule(side, conditions)


def compact(sentence: str) -> str:
    """A rule sentence without the "the" opening each condition (`read_rule` reads it the same)."""
    return re.sub(r"(^| and | or )the ", r"\1", sentence)


def words(text: str) -> set[str]:
    """The lower-cased words of `text` but stop words, a plural "s" dropped ("triangles" is "triangle")."""
    found = set()
    for word in re.findall(r"[a-z]+", text.lower()):
        if word not in STOP_WORDS:
            found.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return found


def shared_words(first: str, second: str) -> list[str]:
    return sorted(words(first) & words(second))


def closest(reference: str, candidates: Sequence[str]) -> tuple[int, list[list[str]]]:
    """The candidate sharing most words with `reference` (ties: the first) by index, and what each shares."""
    shared = [shared_words(reference, candidate) for candidate in candidates]
    best = max(range(len(candidates)), key=lambda index: (len(shared[index]), -index))
    return best, shared
