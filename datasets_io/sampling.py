"""Seeded, stratified samples of a dataset's problems, as the papers draw their test sets.

The case study takes 100 problems from each of the Bongard-HOI and Bongard-OpenWorld test
splits "through stratified sampling based on problem concept labels" (002 Sec. 4). Each stratum
gets its share of the sample by largest remainder, so the sample has exactly the size asked for;
hand-written because scikit-learn's stratified split needs two members per stratum and rounds
sizes its own way, and it is not a dependency here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from datasets_io.errors import BongardError
from datasets_io.problem import Concept

STRATA = "concept (the left rule), group (the concept group) or metadata.KEY"


class SampleError(BongardError, ValueError):
    """A sample that cannot be drawn: too large, or a stratum field problems do not have."""


class SampleSpec(BaseModel):
    """What a run's problems were drawn by; stored with the run beside the drawn ids."""

    model_config = ConfigDict(frozen=True)

    size: int = Field(ge=1)
    stratify: str | None = None
    """concept, group or metadata.KEY; None: a simple random sample."""
    seed: int = 0


class Stratifiable(Protocol):
    """What a sample reads of a problem: a `BongardProblem`, or a run's summary of one."""

    @property
    def concept(self) -> Concept | None: ...
    @property
    def concept_group(self) -> str | None: ...
    @property
    def metadata(self) -> Mapping[str, JsonValue]: ...


P = TypeVar("P", bound=Stratifiable)


def stratum(problem: Stratifiable, field: str) -> str:
    """The problem's label for `field`; problems without one form a stratum of their own ("")."""
    if field == "concept":
        return problem.concept.left if problem.concept else ""
    if field == "group":
        return problem.concept_group or ""
    if field.startswith("metadata.") and len(field) > len("metadata."):
        return str(problem.metadata.get(field.removeprefix("metadata."), ""))
    raise SampleError(f"cannot stratify by {field!r}: use {STRATA}")


def draw(problems: Sequence[P], spec: SampleSpec) -> list[P]:
    """`spec.size` problems, each stratum in proportion to its size, in dataset order."""
    if spec.size > len(problems):
        raise SampleError(f"a sample of {spec.size} from {len(problems)} problems is not possible")
    strata: dict[str, list[P]] = {}
    for problem in problems:
        strata.setdefault(stratum(problem, spec.stratify) if spec.stratify else "", []).append(problem)
    rng = random.Random(f"{spec.seed}:sample")
    quotas = {label: spec.size * len(members) / len(problems) for label, members in strata.items()}
    counts = {label: int(quota) for label, quota in quotas.items()}
    tie_break = {label: rng.random() for label in strata}
    by_remainder = sorted(strata, key=lambda label: (counts[label] - quotas[label], tie_break[label]))
    for label in by_remainder[: spec.size - sum(counts.values())]:
        counts[label] += 1
    chosen = {id(p) for label, members in strata.items() for p in rng.sample(members, counts[label])}
    return [problem for problem in problems if id(problem) in chosen]
