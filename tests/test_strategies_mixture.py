"""mixture on constructed member runs: three images-to-sides runs of classic problems 1-4 (panels 5
and 11 held out) with known answers and costs, combined by vote and by a cascade, and compared."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from datasets_io.records import CallTrace
from graphs.answer import Answer
from results.intervals import wilson
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard

DATASET = "bongard-classic"
TRUTH = {"left-test-5": "left", "right-test-5": "right"}
SWAPPED = {"left-test-5": "right", "right-test-5": "left"}
RIGHT_ON = {"a": {1, 2}, "b": {1, 3}, "c": {1, 2, 3, 4}}
"""Which problems each member solves: vote solves 1-3 (4: a and b agree on the same wrong sides)."""
COST = {"a": 0.01, "b": 0.02, "c": 0.10}
"""Each member's cost per problem: a cascade in the order a, b, c consults c only where a and b differ."""


def member_run(store: ResultsStore, model: str, shared_data: Path, right_on: set[int] | None = None) -> str:
    config: dict[str, Any] = {
        "strategy": "images-to-sides",
        "dataset": DATASET,
        "data_dir": str(shared_data),
        "dataset_options": {"holdout_test": "true"},
        "agents": {"reasoner": model},
        "attempts": 1,
    }
    run_id = store.create_run(config, "test")
    for number in range(1, 5):
        right = number in (RIGHT_ON[model] if right_on is None else right_on)
        call = CallTrace(
            role="reasoner",
            agent=model,
            task="classify",
            conversation="c",
            step=0,
            prompt="",
            reply="",
            cost_usd=COST[model],
        )
        answer = Answer(
            strategy="images-to-sides",
            problem=f"{DATASET}/{number}",
            text="",
            sides=TRUTH if right else SWAPPED,
            expected={"sides": TRUTH},
            correct=right,
            trace=[call],
        )
        store.save_item(run_id, f"{DATASET}/{number}", 0, answer, None)
    store.release_run(run_id, finished=True)
    return run_id


def mix(home: Path, shared_data: Path, members: list[str], *options: str) -> Any:
    """A mixture of `members` over problems 1-4 unless `options` name others (the last --problems wins)."""
    return run_bongard(
        "run",
        "--strategy",
        "mixture",
        "--dataset",
        DATASET,
        "--problems",
        "1-4",
        "-O",
        "holdout_test=true",
        "-S",
        f"members={','.join(members)}",
        *options,
        "--data-dir",
        shared_data,
        "--home",
        home,
    )


def interval(solved: int, n: int) -> str:
    low, high = wilson(solved, n)
    return f"{solved}/{n} {solved / n:.3f} [{low:.3f}, {high:.3f}]"


def test_a_vote_over_stored_runs_pays_nothing_and_compares_with_the_best_member_and_the_oracle(
    shared_data: Path, tmp_path: Path
) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    members = [member_run(store, model, shared_data) for model in ("a", "b", "c")]
    ran = mix(tmp_path, shared_data, members)
    assert ran.returncode == 0, ran.stderr
    mixture = store.resolve_run("latest")
    summary = store.summary(mixture)
    assert (summary.done, summary.calls, summary.solved) == (4, 0, 3)  # no call of its own
    answers = {p: a for p, _, a in store.answer_records(mixture)}
    assert answers[f"{DATASET}/4"].sides == SWAPPED and answers[f"{DATASET}/4"].correct is False
    assert answers[f"{DATASET}/1"].details["members_cost_usd"] == 0.13
    compared = run_bongard("compare", *members, mixture, "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr
    said = " ".join(compared.stdout.split())
    assert (
        f"{mixture} (vote of 3) on {DATASET}: mixture {interval(3, 4)}, $0.5200 ($0.1733 per solved)" in said
    )
    assert f"best member images-to-sides · c {interval(4, 4)}, $0.4000 ($0.1000 per solved)" in said
    assert f"any member {interval(4, 4)}, $0.5200 ($0.1300 per solved)" in said
    from starlette.testclient import TestClient

    from graphs.view.app import create_app

    with TestClient(create_app(tmp_path / STORE_FILE), base_url="http://127.0.0.1") as client:
        shown = client.get("/compare?" + "&".join(f"runs={run}" for run in [*members, mixture])).text
    assert (
        "<h3>Mixtures (members&#39; stored answers combined; costs are the members&#39; calls)</h3>" in shown
    )
    assert f"best member images-to-sides · c {interval(4, 4)}" in shown


def test_a_cascade_consults_the_dear_member_only_where_the_cheap_ones_differ_and_keeps_to_its_cap(
    shared_data: Path, tmp_path: Path
) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    members = [member_run(store, model, shared_data) for model in ("a", "b", "c")]
    assert mix(tmp_path, shared_data, members, "-S", "rule=cascade").returncode == 0
    answers = {p: a for p, _, a in store.answer_records(store.resolve_run("latest"))}
    consulted = {p: len(a.details["consulted"]) for p, a in answers.items()}
    assert consulted == {f"{DATASET}/{n}": count for n, count in ((1, 2), (2, 3), (3, 3), (4, 2))}
    assert [answers[f"{DATASET}/{n}"].correct for n in range(1, 5)] == [True, True, True, False]
    assert round(sum(a.details["members_cost_usd"] for a in answers.values()), 6) == 0.32
    assert mix(tmp_path, shared_data, members, "-S", "rule=cascade", "-S", "cost_cap=0.05").returncode == 0
    capped = {p: a for p, _, a in store.answer_records(store.resolve_run("latest"))}
    assert [capped[f"{DATASET}/{n}"].correct for n in range(1, 5)] == [True, False, False, False]
    assert capped[f"{DATASET}/2"].sides == {"left-test-5": None, "right-test-5": None}  # a and b tie


def test_mixtures_of_the_same_runs_by_other_rules_are_rows_apart_in_one_compare(
    shared_data: Path, tmp_path: Path
) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    members = [member_run(store, model, shared_data) for model in ("a", "b", "c")]
    mixtures = []
    for options in ((), ("-S", "rule=cascade")):
        assert mix(tmp_path, shared_data, members, *options).returncode == 0
        mixtures.append(store.resolve_run("latest"))
    compared = run_bongard(
        "compare", *members, *mixtures, "--wide", "--out", tmp_path / "report", "--home", tmp_path
    )
    assert compared.returncode == 0, compared.stderr
    said = " ".join(compared.stdout.split())
    assert f"{mixtures[0]} (vote of 3) on {DATASET}: mixture {interval(3, 4)}" in said
    assert f"{mixtures[1]} (cascade of 3) on {DATASET}: mixture {interval(3, 4)}" in said
    assert re.search(r"\| mixture +\| no model +\| bongard-classic", compared.stdout)  # the vote: defaults
    assert re.search(r"\| mixture +\| no model \(rule=cascade\) +\| bongard-classic", compared.stdout)


def test_without_completing_a_member_lacking_the_problem_fails_the_item_naming_it(
    shared_data: Path, tmp_path: Path
) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    members = [member_run(store, model, shared_data) for model in ("a", "b")]
    ran = mix(tmp_path, shared_data, members, "--problems", "5", "-S", "complete=false")
    assert f"member run {members[0]} has no answer for {DATASET}/5 (run it there first)" in ran.stderr
    completing = mix(tmp_path, shared_data, members, "--problems", "5")  # model 'a' cannot be run
    assert completing.returncode == 2
    assert completing.stderr.startswith(f"error: running member {members[0]} on the 1 problem(s) it lacks: ")
    assert "-S complete=false fails them instead" in completing.stderr


def test_a_member_is_run_only_on_the_problems_its_run_lacks(shared_data: Path, tmp_path: Path) -> None:
    """Two perception members stored on problems 1-2; a mixture over 1-3 runs each on problem 3 alone,
    as a new run of its settings joined to it (`RUN+RUN`), and combines all three problems."""
    members = []
    for strategy in ("images-to-sides", "program-search"):
        ran = run_bongard(
            "run",
            "--strategy",
            strategy,
            "--model",
            "perception",
            "--dataset",
            DATASET,
            "--problems",
            "1-2",
            "-O",
            "holdout_test=true",
            "--data-dir",
            shared_data,
            "--home",
            tmp_path,
        )
        assert ran.returncode == 0, ran.stderr
        members.append(ResultsStore(tmp_path / STORE_FILE).resolve_run("latest"))
    assert mix(tmp_path, shared_data, members, "--problems", "1-3").returncode == 0
    store = ResultsStore(tmp_path / STORE_FILE)
    mixture = store.resolve_run("latest")
    options = store.run_config(mixture)["strategy_options"]
    joined = [member.split("+") for member in options["members"].split(",")]
    assert [runs[0] for runs in joined] == members and all(len(runs) == 2 for runs in joined)
    filled = [store.summary(runs[1]) for runs in joined]
    assert [(s.done, s.calls) for s in filled] == [(1, 1), (1, 12)]  # problem 3 alone, each member's calls
    assert [s.config["problems"] for s in filled] == [["3"], ["3"]]
    assert (store.summary(mixture).done, store.summary(mixture).calls) == (3, 0)


def test_members_of_one_strategy_and_model_stay_apart_and_no_member_beats_the_oracle(
    shared_data: Path, tmp_path: Path
) -> None:
    """Two runs of images-to-sides by model a (other runs, as program-search with and without a
    ranking are) each solve problems 1 and 2: added under one label they read 4 of 4, above the
    any-member oracle's 2."""
    store = ResultsStore(tmp_path / STORE_FILE)
    members = [member_run(store, "a", shared_data, {1, 2}), member_run(store, "a", shared_data, {1, 2})]
    members.append(member_run(store, "b", shared_data, {1}))
    assert mix(tmp_path, shared_data, members).returncode == 0
    mixture = store.resolve_run("latest")
    compared = run_bongard("compare", mixture, "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr
    said = " ".join(compared.stdout.split())
    assert f"best member images-to-sides · a ({members[0]}) {interval(2, 4)}" in said
    assert f"any member {interval(2, 4)}" in said
