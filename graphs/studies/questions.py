"""What a participant is shown for one problem: the images and the question a model is given for the
study's task, put to a person.

The inputs come from the task's own strategy (`graphs.solve.strategy_inputs`) with a run's default
seed, so a participant sees the same test images in the same order, and the same K candidates in the
same order, as a model run of that strategy on the same problems.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.prompt_library import PromptLibrary, prompt_family
from datasets_io.catalog import Dataset, open_dataset
from datasets_io.problem import BongardProblem, Panel
from graphs.registry import DatasetContext, get_strategy, seeded_random
from graphs.solve import strategy_inputs
from graphs.studies.design import StudyDesign

FAMILY = prompt_family("studies", "graphs")
RUN_SEED = 0
"""A run's default seed: the one model runs are compared at."""
CALL_TASKS = {
    "direct": "answer",
    "images-to-sides": "classify",
    "concept-selection": "select",
    "concept-probe": "probe",
}
"""The call kind each task's strategy makes, as the participant's one page is traced."""


@dataclass(frozen=True)
class Candidate:
    label: int
    left: str
    right: str


@dataclass(frozen=True)
class Question:
    """One problem as a page shows it and as its answer is scored."""

    problem: BongardProblem
    task: str
    text: str
    """The question, in the study's words (`graphs/prompts/studies/`)."""
    tests: tuple[str, ...] = ()
    """Images to sides: the refs of the two test images, in the order shown."""
    candidates: tuple[Candidate, ...] = ()
    """Concept selection: the K pairs of rules, in the order shown."""
    concepts: tuple[str, str] | None = None
    """Concept probe: concept 1 (the left side's) and concept 2 (the right side's)."""
    inputs: Any = None
    """The strategy's inputs for the problem, as its scoring reads them."""
    shown_panels: tuple[str, ...] = field(default=())
    """Concept probe: each context panel, asked about alone."""

    def panel(self, ref: str) -> Panel:
        return next(panel for panel in self.problem.all_panels if panel.ref == ref)

    @property
    def images(self) -> list[list[str]]:
        """The panels behind each image shown, as a call's trace lists them."""
        if self.task == "concept-probe":
            return [[ref] for ref in self.shown_panels]
        sheet = [panel.ref for panel in self.problem.context_panels]
        return [sheet, *([ref] for ref in self.tests)]


def _shuffled(refs: list[str], problem: BongardProblem) -> list[str]:
    """A probe's panels in a seeded order: a model is shown each alone, a person all on one page,
    where the dataset's order (six left, then six right) would give the answer away."""
    seeded_random(RUN_SEED, problem, "study-probe-order").shuffle(refs)
    return refs


class StudyQuestions:
    """The questions of one study, over its dataset opened once."""

    def __init__(self, design: StudyDesign, prompts: PromptLibrary | None = None) -> None:
        self.design = design
        self.prompts = prompts or PromptLibrary()
        self.dataset: Dataset = open_dataset(
            design.dataset, Path(design.data_dir) if design.data_dir else None, design.options
        )
        self.info = get_strategy(design.task)
        labels = self.dataset.label_table() if self.info.reads_label_table else None
        self.context = DatasetContext.of(self.dataset.survey().problems, labels)
        self.options = self.info.parse_options(self.strategy_options)

    @property
    def strategy_options(self) -> dict[str, str]:
        """The `-S` options of the task's strategy that the design fixes (K of a concept selection)."""
        if self.design.task == "concept-selection" and self.design.candidates is not None:
            return {"concepts": str(self.design.candidates)}
        return {}

    def question(self, problem_id: str) -> Question:
        """The question of one of the study's problems (or its instructions problem)."""
        problem = self.dataset.problem(problem_id)
        inputs = strategy_inputs(self.design.task, problem, self.context, RUN_SEED, self.options)
        task = self.design.task
        if task == "images-to-sides":
            return Question(
                problem, task, self._text("images_to_sides"), tests=tuple(inputs["order"]), inputs=inputs
            )
        if task == "concept-selection":
            listed = tuple(Candidate(c["label"], c["left"], c["right"]) for c in inputs["candidates"])
            return Question(problem, task, self._text("concept_selection"), candidates=listed, inputs=inputs)
        if task == "concept-probe":
            first, second = inputs["concepts"]
            return Question(
                problem,
                task,
                self._text("concept_probe"),
                concepts=(first, second),
                inputs=inputs,
                shown_panels=tuple(_shuffled([panel.ref for panel in problem.context_panels], problem)),
            )
        return Question(problem, task, self._text("direct"), inputs=inputs)

    def instructions(self) -> str:
        return self._text("instructions")

    def _text(self, name: str, **values: object) -> str:
        return self.prompts.fill(FAMILY, name, **values)
