"""The nine concept groups of Bongard-RWR+ and the problems the paper assigns to them.

The Bongard-RWR+ paper (Pawlonka et al.) reports accuracy per concept group (Sec. 4, Figs. 6, 14
and 18b) but never publishes which group each concept belongs to. `data/concept_groups.json`
collects the assignments the paper's text does state (Tables 14 and 15, App. C.10), keyed by the
number of the classic Bongard problem whose rule pair is that concept. The mapping is PARTIAL:
a problem missing from `known_groups()` has an unknown group, not no group.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

CONCEPT_GROUPS: tuple[str, ...] = (
    "Size",
    "Position",
    "Count",
    "Branching",
    "Similarity",
    "Contour",
    "Shape",
    "Rotation",
    "Angle",
)
"""The nine groups, in the order the paper names them (Sec. 4, "Concept selection")."""

_CANONICAL = {name.casefold(): name for name in CONCEPT_GROUPS}


@cache
def _known() -> dict[str, str]:
    text = files("datasets_io").joinpath("data", "concept_groups.json").read_text(encoding="utf-8")
    problems: dict[str, dict[str, str]] = json.loads(text)["problems"]
    return {number: check_group(entry["group"]) for number, entry in problems.items()}


def known_groups() -> dict[str, str]:
    """Classic problem number ("1".."100") -> concept group, for the problems the paper assigns.

    Read once from the package data; each call returns a fresh copy the caller may change.
    """
    return dict(_known())


def check_group(name: str) -> str:
    """The canonical spelling of one of the nine groups, matched case-insensitively."""
    canonical = _CANONICAL.get(name.strip().casefold())
    if canonical is None:
        raise ValueError(f"unknown concept group {name!r}; expected one of: {', '.join(CONCEPT_GROUPS)}")
    return canonical
