"""A study's participants beside model runs of its task: who is counted, what each solved, how far
the participants agree (Fleiss' kappa, statsmodels'), and how far the judging agrees with an expert.

The model runs are the ones named, or else every stored run of the study's strategy on its dataset
that answered at least one of its problems; a participant is counted when the study's inclusion
rule counts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from datasets_io.problem import own_id
from datasets_io.wonderland_categories import wonderland_category
from datasets_io.workspace import store_home_flag
from graphs.registry import get_strategy
from graphs.studies.design import StudyDesignError
from graphs.studies.participants import HUMAN, Study
from judges.agreement import cohen_kappa, fleiss_kappa
from results.counting import DEFAULT_COUNTING, Counting
from results.report import items_frame, solved_problems
from results.run_compatibility import model_label
from results.store import ResultsStore
from results.studies import ItemKey
from results.study_report import Solver, StudyTable


@dataclass(frozen=True)
class ExpertAgreement:
    """The counted judging's verdicts against an expert's on the same answers."""

    answers: int
    agreed: int
    kappa: float
    """Cohen's kappa between the judging and the expert (NaN where undefined)."""


@dataclass
class StudyComparison:
    task: str
    table: StudyTable
    excluded: list[str]
    """Participants the inclusion rule leaves out, each with why."""
    kappa: float | None
    """Fleiss' kappa of the counted participants' solved-or-not per problem; None below two of them."""
    notes: list[str] = field(default_factory=list)
    """What the reader should know: runs not judged yet, problems a model run did not answer."""
    experts: dict[str, ExpertAgreement] = field(default_factory=dict)
    """Per expert whose verdicts are stored (`bongard study review`): the judging against them."""


def compare_study(
    store: ResultsStore,
    name: str,
    model_runs: Sequence[str] = (),
    counting: Counting = DEFAULT_COUNTING,
) -> StudyComparison:
    """The study `name` beside `model_runs` (ids or `latest`; none: every stored run of its task on
    its dataset), and the judging against each expert whose verdicts are stored."""
    study = Study(store, name)
    design = study.design
    problems = design.problems
    dataset = _dataset_name(study)
    notes: list[str] = []
    participants, excluded = [], []
    for standing in study.standings():
        who = standing.participant
        if standing.included:
            participants.append(_solver(store, who.pseudonym, who.run_id, True, dataset, counting, notes))
        else:
            share = f"tried {standing.tried} of {standing.problems}"
            excluded.append(f"{who.pseudonym} ({share}, not more than {design.include_above:.0%})")
    runs = [store.resolve_run(run) for run in model_runs] or _runs_of_task(store, study)
    models = []
    for run_id in runs:
        config = store.run_config(run_id)
        if config["strategy"] != design.task or config["dataset"] != design.dataset:
            raise StudyDesignError(
                f"run {run_id} is {config['strategy']} on {config['dataset']}; study {name} asks "
                f"{design.task} on {design.dataset}"
            )
        label = f"{model_label(config)} ({run_id[-6:]})"
        models.append(_solver(store, label, run_id, False, dataset, counting, notes))
        answered = {own_id(p, dataset) for p, _ in store.finished_items(run_id)}
        missing = [p for p in problems if p not in answered]
        if missing:
            notes.append(
                f"run {run_id} answered {len(problems) - len(missing)} of the study's {len(problems)} "
                "problems; the rest count as unsolved"
            )
    table = StudyTable(problems, _categories(study), tuple(participants), tuple(models))
    kappa = None
    if len(participants) >= 2:
        kappa = fleiss_kappa([["ok" if p in s.solved else "wrong" for s in participants] for p in problems])
    experts = {
        expert: agreement
        for expert, verdicts in study.records.labels(name).items()
        if (agreement := _expert_agreement(store, table, verdicts)) is not None
    }
    return StudyComparison(design.task, table, excluded, kappa, notes, experts)


def _solver(
    store: ResultsStore,
    label: str,
    run_id: str,
    human: bool,
    dataset: str,
    counting: Counting,
    notes: list[str],
) -> Solver:
    """What a participant's or model's run solved, by the problems' own ids in `dataset`."""
    config = store.run_config(run_id)
    if (
        get_strategy(config["strategy"]).judged
        and store.judged_items(run_id) == 0
        and store.finished_items(run_id)
    ):
        notes.append(
            f"{'participant ' if human else ''}{label}'s run {run_id} is not judged yet, so solves nothing: "
            f"judge it, offline with `bongard judge {run_id} --judges embedding"
            f"{store_home_flag(store.path.parent)}`"
        )
    solved = solved_problems(store, run_id, counting)
    return Solver(label, run_id, human, frozenset(own_id(p, dataset) for p in solved))


def _dataset_name(study: Study) -> str:
    return study.questions.dataset.name


def _runs_of_task(store: ResultsStore, study: Study) -> list[str]:
    """Every stored model run of the study's strategy on its dataset with an answer to one of its problems."""
    found = []
    wanted = set(study.design.problems)
    for run_id in store.run_ids():
        config = store.run_config(run_id)
        agents = config.get("agents", {}).values()
        if config["strategy"] != study.design.task or config["dataset"] != study.design.dataset:
            continue
        if any(str(agent).startswith(f"{HUMAN}:") for agent in agents):
            continue
        answered = {own_id(p, _dataset_name(study)) for p, _ in store.finished_items(run_id)}
        if answered & wanted:
            found.append(run_id)
    return found


def _categories(study: Study) -> dict[str, str | None]:
    """Wonderland's five categories for the classic problems (Fig. 4), else each problem's concept group."""
    dataset = study.questions.dataset
    return {
        p: wonderland_category(dataset.name, p) or dataset.problem(p).concept_group
        for p in study.design.problems
    }


def _expert_agreement(
    store: ResultsStore, table: StudyTable, verdicts: Mapping[ItemKey, bool]
) -> ExpertAgreement | None:
    """The judging's solved-or-not beside the expert's verdict, on each answer of the compared
    solvers the expert labelled; None where they labelled none of them."""
    judged: list[str] = []
    theirs: list[str] = []
    for solver in table.solvers():
        for row in items_frame(store, [solver.run_id]).itertuples():
            label = verdicts.get((solver.run_id, str(row.problem), int(row.attempt)))
            if label is not None:
                judged.append("ok" if row.solved else "wrong")
                theirs.append("ok" if label else "wrong")
    if not judged:
        return None
    agreed = sum(a == b for a, b in zip(judged, theirs, strict=True))
    return ExpertAgreement(
        len(judged), agreed, cohen_kappa(judged, theirs) if len(judged) > 1 else float("nan")
    )
