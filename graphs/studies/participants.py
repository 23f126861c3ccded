"""A study's participants: invited by pseudonym with a link of their own, taken through the study's
problems in order and sessions, each answer kept as given and as an item of their run.

A participant is a run of agent `human:PSEUDONYM`: the task's strategy, the study's problems, a run's
default seed. Its items are written as answers come in, so `bongard judge`, `compare`, `show` and the
viewer read a person's run as they read a model's.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from graphs.runs.provenance import toolkit_version
from graphs.runs.runner import RunConfig, data_folder
from graphs.studies.answers import DONT_KNOW, scored_answer
from graphs.studies.design import StudyDesign, StudyDesignError
from graphs.studies.questions import RUN_SEED, Question, StudyQuestions
from results.store import ResultsStore
from results.studies import GivenAnswer, Participant, StudyRecords

HUMAN = "human"
"""The provider part of a participant's agent spec."""
PSEUDONYM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
INSTRUCTIONS_SEEN = {"instructions": True}


def human_agent(pseudonym: str) -> str:
    return f"{HUMAN}:{pseudonym}"


@dataclass(frozen=True)
class Step:
    """Where a participant stands: the problem to show next (None when done), and whether a session
    break comes before it."""

    problem: str | None
    instructions: bool = False
    session: int = 0
    """The next problem's session, from 0."""
    number: int = 0
    """The next problem's place in its session, from 0."""
    answered: int = 0
    at_break: bool = False


@dataclass(frozen=True)
class Standing:
    """A participant against the study's inclusion rule."""

    participant: Participant
    answered: int
    tried: int
    """Answers other than "I don't know" given within the time limit."""
    problems: int
    include_above: float

    @property
    def included(self) -> bool:
        return self.tried > self.include_above * self.problems


class Study:
    """One stored study, open for its participants' pages and the commands that manage them."""

    def __init__(self, store: ResultsStore, name: str) -> None:
        self.store = store
        self.name = name
        self.records = StudyRecords(store)
        self.design = StudyDesign.from_json(self.records.get(name).design)
        self._asked: dict[str, Question] = {}

    @cached_property
    def questions(self) -> StudyQuestions:
        """The study's dataset, opened on first need (listing participants needs none of it)."""
        return StudyQuestions(self.design)

    def question(self, problem: str) -> Question:
        if problem not in self._asked:
            self._asked[problem] = self.questions.question(problem)
        return self._asked[problem]

    def check_questions(self) -> None:
        """Every problem's question made once, so a problem the task cannot be asked on (no test
        images, no concept table) is refused before anyone is invited, not on a participant's page."""
        for problem in self.shown_order:
            self.question(problem)

    @property
    def shown_order(self) -> list[str]:
        first = [self.design.instructions] if self.design.instructions is not None else []
        return [*first, *self.design.problems]

    def invite(self, pseudonym: str) -> tuple[Participant, str]:
        """A new participant and their link token (shown once: the store keeps only its hash)."""
        if not PSEUDONYM.fullmatch(pseudonym):
            raise StudyDesignError(
                f"pseudonym {pseudonym!r}: use up to 40 letters, digits, '.', '_' or '-', starting with "
                "a letter or digit (never a participant's name)"
            )
        self.check_questions()
        config = RunConfig(
            strategy=self.design.task,
            dataset=self.design.dataset,
            data_dir=self.design.data_dir,
            dataset_options=self.design.options,
            agents={role: human_agent(pseudonym) for role in self.questions.info.roles},
            problems=list(self.design.problems),
            seed=RUN_SEED,
            concurrency=1,
            strategy_options=self.questions.strategy_options,
        )
        config = config.model_copy(update={"data_dir": data_folder(config)})
        run_id = self.store.create_run(config.model_dump(mode="json"), toolkit_version() or "unknown")
        self.store.hold_run(run_id, len(self.design.problems))
        self.store.release_run(run_id, finished=False)
        token = secrets.token_urlsafe(24)
        try:
            participant = self.records.add_participant(self.name, pseudonym, token, run_id)
        except Exception:
            self.store.delete_run(run_id)
            raise
        return participant, token

    def new_link(self, pseudonym: str) -> str:
        token = secrets.token_urlsafe(24)
        self.records.new_link(self.name, pseudonym, token)
        return token

    def step(self, participant: Participant) -> Step:
        answers = self.records.answers(self.name, participant.pseudonym)
        answered = sum(1 for p in self.design.problems if _answered(answers.get(p)))
        for place, problem in enumerate(self.shown_order):
            if _answered(answers.get(problem)):
                continue
            instructions = problem == self.design.instructions
            counted = place - (1 if self.design.instructions is not None else 0)
            session, number = divmod(max(counted, 0), self.design.session_size)
            at_break = not instructions and counted > 0 and number == 0 and problem not in answers
            return Step(problem, instructions, session, number, answered, at_break)
        return Step(None, answered=answered, session=len(self.design.sessions))

    def show(self, participant: Participant, problem: str) -> GivenAnswer:
        """The problem shown (its time counts from its first showing)."""
        return self.records.shown(self.name, participant.pseudonym, problem)

    def answer(self, participant: Participant, problem: str, given: Mapping[str, Any]) -> bool:
        """An answer kept as given and written as the participant's item; False where the problem
        was not the one shown or was answered already (nothing is kept)."""
        if problem == self.design.instructions:
            return (
                self.records.answer(self.name, participant.pseudonym, problem, INSTRUCTIONS_SEEN) is not None
            )
        kept = self.records.answer(self.name, participant.pseudonym, problem, dict(given))
        if kept is None:
            return False
        self._write_item(participant, kept)
        if self.step(participant).problem is None:
            self.store.release_run(participant.run_id, finished=True)
        return True

    def catch_up(self, participant: Participant) -> None:
        """Items for answers kept but not yet written (a process stopped between the two writes)."""
        written = {problem for problem, _ in self.store.finished_items(participant.run_id)}
        for given in self.records.answers(self.name, participant.pseudonym).values():
            question_key = self.question(given.problem).problem.key if _counted(self.design, given) else None
            if question_key is not None and question_key not in written:
                self._write_item(participant, given)

    def standings(self) -> list[Standing]:
        """Every participant, with how many problems they answered and tried, and whether the
        study's inclusion rule counts them."""
        found = []
        for participant in self.records.participants(self.name):
            answers = self.records.answers(self.name, participant.pseudonym)
            given = [answers[p] for p in self.design.problems if _answered(answers.get(p))]
            tried = sum(1 for answer in given if not self._unanswered(answer))
            found.append(
                Standing(participant, len(given), tried, len(self.design.problems), self.design.include_above)
            )
        return found

    def _unanswered(self, given: GivenAnswer) -> bool:
        limit = self.design.time_limit_s
        late = limit is not None and given.seconds is not None and given.seconds > limit
        return late or bool((given.answer or {}).get(DONT_KNOW))

    def _write_item(self, participant: Participant, given: GivenAnswer) -> None:
        assert given.answer is not None and given.seconds is not None
        question = self.question(given.problem)
        limit = self.design.time_limit_s
        over_time = limit is not None and given.seconds > limit
        answer = scored_answer(
            question, given.answer, human_agent(participant.pseudonym), given.seconds, over_time
        )
        self.store.save_item(participant.run_id, question.problem.key, 0, answer, None)


def _answered(given: GivenAnswer | None) -> bool:
    return given is not None and given.answered_at is not None


def _counted(design: StudyDesign, given: GivenAnswer) -> bool:
    return _answered(given) and given.problem != design.instructions
