"""Analyses across stored runs: which runs go together, and what each analysis needs of them.

The tables themselves come from `results` (query accuracy, Type I-IV sets, accuracy per group)
and `judges` (rule-description similarity); this module picks the runs out of
the store, checks they are the runs an analysis needs, and says what is missing
(an unjudged run solves nothing until it is judged).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from datasets_io.catalog import Dataset, open_run_dataset
from datasets_io.problem import own_id
from datasets_io.wonderland_categories import wonderland_category
from datasets_io.workspace import store_home_flag
from graphs.registry import StrategyError, get_strategy
from judges.metrics import METRICS, MetricScore, concept_metrics
from results.counting import DEFAULT_COUNTING, Counting
from results.probe_report import panel_hits, problems_meeting
from results.report import accuracy_per_group, problems_frame, runs_frame, solved_problems
from results.store import ResultsStore
from results.task2 import CRITERION_WORDS, ProbeCriterion
from results.task_types import TASKS, TaskTypes


@dataclass
class TypesAnalysis:
    types: TaskTypes
    title: str
    warnings: list[str] = field(default_factory=list)


def task_types_of_runs(
    store: ResultsStore,
    runs: tuple[str, str, str],
    countings: tuple[Counting, ...] = (DEFAULT_COUNTING,) * 3,
    probe_criterion: ProbeCriterion = "two-thirds",
) -> TypesAnalysis:
    """Type I-IV from an open-ended, a concept-probe and a hypotheses run of one dataset, each task's
    attempts counted its own way (Task 3 is run once in the paper, Tasks 1 and 2 three times). Task 2
    counts by `probe_criterion`: per panel across attempts as the paper does (every panel right in
    at least 2 of 3, or in every attempt), or per attempt (all 12 right in the attempts its counting
    takes, as the run table counts solved)."""
    resolved = [store.resolve_run(run) for run in runs]
    configs = [store.run_config(run_id) for run_id in resolved]
    for task, run_id, config in zip(TASKS, resolved, configs, strict=True):
        if config["strategy"] != task:
            raise StrategyError(f"run {run_id} is a {config['strategy']} run; expected {task}")
    datasets = {config["dataset"] for config in configs}
    if len(datasets) > 1:
        raise StrategyError(f"the three runs must be of one dataset, not of {', '.join(sorted(datasets))}")
    warnings = [
        f"run {run_id} ({config['strategy']}) is not judged yet: judge it, offline with "
        f"`bongard judge {run_id} --judges embedding{store_home_flag(store.path.parent)}`"
        for run_id, config in zip(resolved, configs, strict=True)
        if get_strategy(config["strategy"]).judged and store.judged_items(run_id) == 0
    ]
    models = sorted(set(runs_frame(store, resolved)["model"]))
    if len(models) > 1:
        warnings.append(f"the runs are of different models ({', '.join(models)}); types compare one model")
    t1, t2, t3 = (
        frozenset(solved_problems(store, run_id, counting))
        for run_id, counting in zip(resolved, countings, strict=True)
    )
    if probe_criterion != "per-attempt":
        t2 = frozenset(problems_meeting(panel_hits(store, resolved[1]), probe_criterion))
    title = f"{' / '.join(models)} on {datasets.pop()}; Task 2: {CRITERION_WORDS[probe_criterion]}"
    return TypesAnalysis(TaskTypes(t1, t2, t3), title, warnings)


@dataclass
class RunMetrics:
    scores: list[MetricScore]
    pairs: int
    """(true rule, generated rule) pairs scored: a left and a right one per answer with both."""
    skipped: int
    """Answers without parsed rules, or problems without a concept."""


def concept_generation_metrics(
    store: ResultsStore, run_id: str, metrics: tuple[str, ...] = METRICS
) -> RunMetrics:
    """Text metrics of a run's generated rules against the true ones, side by side (Bongard-RWR+ CG)."""
    dataset = open_run_dataset(store.run_config(run_id))
    references: list[str] = []
    candidates: list[str] = []
    skipped = 0
    for problem, _, answer in store.answer_records(run_id):
        concept = dataset.problem(own_id(problem, dataset.name)).concept
        pairs = [
            (truth, given)
            for truth, given in (
                (concept and concept.left, answer.left_rule),
                (concept and concept.right, answer.right_rule),
            )
            if truth and given
        ]
        if not pairs:
            skipped += 1
        references += [truth for truth, _ in pairs]
        candidates += [str(generated) for _, generated in pairs]
    if not references:
        raise StrategyError(f"run {run_id} holds no generated rules to score")
    return RunMetrics(concept_metrics(references, candidates, metrics), len(references), skipped)


UNKNOWN_GROUP = "unknown"
ProblemKey = Callable[[str, Dataset, str], str | None]
"""(run's dataset name, the dataset, problem id) -> the problem's group, or None if unknown."""


def accuracy_by(
    store: ResultsStore,
    run_ids: list[str],
    heading: str,
    key: ProblemKey,
    counting: Counting = DEFAULT_COUNTING,
) -> pd.DataFrame:
    """Solved problems and accuracy per strategy, model, dataset and `heading` (a problem's group
    as `key` gives it); problems without one count as `unknown`. Accuracy is solved / n, the problems
    scored (failed ones outside n, counted apart), with its 95% Wilson interval, as the run table's."""
    problems = problems_frame(store, run_ids, counting)
    datasets = {run_id: open_run_dataset(store.run_config(run_id)) for run_id in run_ids}
    keys = [
        key(dataset_name, datasets[run_id], own_id(problem, datasets[run_id].name)) or UNKNOWN_GROUP
        for run_id, dataset_name, problem in zip(
            problems["run_id"], problems["dataset"], problems["problem"], strict=True
        )
    ]
    return accuracy_per_group(problems.assign(**{heading: keys}), heading)


def group_accuracy(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """Per concept group (Bongard-RWR+, Fig. 6 and 14), as the dataset assigns them."""
    return accuracy_by(
        store, run_ids, "group", lambda _, dataset, problem: dataset.problem(problem).concept_group, counting
    )


def wonderland_category_accuracy(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """Per Bongard in Wonderland category of the classic problems (size, concept, number, spatial,
    same; 003 App. B.2, Fig. 4)."""
    return accuracy_by(
        store, run_ids, "category", lambda name, _, problem: wonderland_category(name, problem), counting
    )
