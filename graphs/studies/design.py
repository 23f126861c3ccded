"""A human study's design: the task, the problems a participant sees, in which order and sessions.

Paper 003 answers its Q2 (how do VLMs compare with humans?) with a study of its own: three sessions of
33 problems each in the original order, BP#1 kept to explain the task, a rule for each side or
"I don't know" per problem. A design names the same choices for any dataset and task, so a study of
new problems can be run the same way and read beside the models' runs on them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from datasets_io.catalog import Dataset
from datasets_io.errors import BongardError

STUDY_TASKS = {
    "direct": "a rule for each side in the participant's own words (the case study's Task 1)",
    "images-to-sides": "each of the two test images put on its side",
    "concept-selection": "the problem's concept picked among K candidates",
    "concept-probe": "whether a given concept holds, panel by panel",
}
"""What a participant answers, named by the strategy whose model runs the study is compared with."""
CANDIDATE_COUNTS = (2, 4, 8, 16)
"""K of a concept selection, as Bongard-RWR+'s task offers it."""
Order = Literal["original", "shuffled"]


class StudyDesignError(BongardError):
    """A design that cannot be run: an unknown task, no problems, a choice the task does not take."""


@dataclass(frozen=True)
class StudyDesign:
    dataset: str
    """As the user named it (a name in the data directory, or `FORMAT:PATH`)."""
    task: str
    problems: tuple[str, ...]
    """The dataset's own ids, in the order a participant sees them; the instructions problem apart."""
    session_size: int
    instructions: str | None = None
    """The problem shown first, with the task explained on it; never counted."""
    dont_know: bool = True
    """Whether "I don't know" may be answered."""
    time_limit_s: float | None = None
    """Per problem; None: no limit."""
    include_above: float = 0.5
    """The inclusion rule: a participant counts when they tried (answered other than "I don't know")
    more than this share of the problems (paper 003 kept those who tried more than 50 %)."""
    order: Order = "original"
    seed: int | None = None
    """The shuffle's seed (a shuffled design always records one)."""
    candidates: int | None = None
    """K, for concept selection."""
    data_dir: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    """The dataset loader's options (`-O KEY=VALUE`), as the models' runs name them."""

    @property
    def sessions(self) -> list[tuple[str, ...]]:
        """The problems split into sessions of `session_size`, the last one shorter where they do not
        divide evenly."""
        size = self.session_size
        return [self.problems[start : start + size] for start in range(0, len(self.problems), size)]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "problems": list(self.problems)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StudyDesign:
        return cls(**{**data, "problems": tuple(data["problems"])})


def design_study(
    dataset: Dataset,
    spec: str,
    task: str,
    *,
    selection: Sequence[str] | None = None,
    order: Order = "original",
    seed: int | None = None,
    session_size: int = 33,
    instructions: str | None = None,
    dont_know: bool = True,
    time_limit_s: float | None = None,
    include_above: float = 0.5,
    candidates: int | None = None,
    data_dir: str | None = None,
    options: dict[str, str] | None = None,
) -> StudyDesign:
    """A design over `dataset`'s problems (all, or `selection` in the order given; `spec` names the
    dataset as the user did, a name or `FORMAT:PATH`, so it opens again), checked before it
    is kept: every id resolved against the dataset, the instructions problem taken out of the counted
    ones, the order shuffled with a recorded seed where asked."""
    if task not in STUDY_TASKS:
        raise StudyDesignError(f"no study task {task!r} (tasks: {', '.join(STUDY_TASKS)})")
    if candidates is not None and task != "concept-selection":
        raise StudyDesignError(f"--candidates is K of a concept selection, not of {task}")
    if task == "concept-selection":
        candidates = candidates or 4
        if candidates not in CANDIDATE_COUNTS:
            raise StudyDesignError(
                f"K must be one of {', '.join(map(str, CANDIDATE_COUNTS))}, not {candidates}"
            )
    if not 0 <= include_above < 1:
        raise StudyDesignError(
            f"--include-above is a share from 0 up to (not including) 1, not {include_above:g}"
        )
    if session_size < 1:
        raise StudyDesignError(f"a session holds at least one problem, not {session_size}")
    if time_limit_s is not None and time_limit_s <= 0:
        raise StudyDesignError(f"a time limit is a number of seconds above 0, not {time_limit_s:g}")
    ids = [dataset.resolve_id(problem) for problem in selection] if selection else dataset.problem_ids()
    repeated = sorted({problem for problem in ids if ids.count(problem) > 1})
    if repeated:
        raise StudyDesignError(f"problems named twice: {', '.join(repeated)}")
    shown_first = dataset.resolve_id(instructions) if instructions is not None else None
    counted = [problem for problem in ids if problem != shown_first]
    if not counted:
        raise StudyDesignError("the study has no problem to answer beside its instructions problem")
    if order == "shuffled":
        seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
        random.Random(seed).shuffle(counted)
    elif seed is not None:
        raise StudyDesignError("--seed shuffles the problems: give it with --order shuffled")
    return StudyDesign(
        dataset=spec,
        task=task,
        problems=tuple(counted),
        session_size=session_size,
        instructions=shown_first,
        dont_know=dont_know,
        time_limit_s=time_limit_s,
        include_above=include_above,
        order=order,
        seed=seed,
        candidates=candidates,
        data_dir=data_dir,
        options=dict(options or {}),
    )
