"""mixture-rules on constructed member runs: three runs' stated rules for classic problems 1 and 2,
combined by agreement with no call of its own, then judged offline like any stated rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphs.answer import Answer
from graphs.registry import get_strategy
from graphs.strategies.mixture_rules import agreement
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard

DATASET = "bongard-classic"
STATED = {
    "a": {
        1: "Left: an empty picture\nRight: a picture with something drawn",
        2: "Left: big figures\nRight: tiny ones",
    },
    "b": {
        1: "Left: the picture is empty\nRight: the picture is not empty",
        2: "Left: large figures\nRight: small ones",
    },
    "c": {1: "Left: triangles pointing up\nRight: circles", 2: "Left: large figures\nRight: small figures"},
}
"""Problem 1: a and b say it (each in its own words), c does not; problem 2: all three near it."""


def member_run(store: ResultsStore, model: str, shared_data: Path) -> str:
    config: dict[str, Any] = {
        "strategy": "direct",
        "dataset": DATASET,
        "data_dir": str(shared_data),
        "agents": {"reasoner": model},
        "attempts": 1,
    }
    run_id = store.create_run(config, "test")
    for number, text in STATED[model].items():
        answer = Answer(strategy="direct", problem=f"{DATASET}/{number}", text=text, parse_status="ok")
        store.save_item(run_id, f"{DATASET}/{number}", 0, answer, None)
    store.release_run(run_id, finished=True)
    return run_id


def test_agreement_is_each_texts_mean_rouge_l_against_the_others() -> None:
    same, other = "Left: large figures\nRight: small figures", "Left: circles\nRight: squares"
    assert agreement([same]) == [1.0]
    scores = agreement([same, same, other])
    assert scores[0] == scores[1] > scores[2]
    assert 0.5 < scores[0] < 1.0  # half its company says exactly it


def test_the_most_agreed_rule_is_chosen_without_a_call_and_judged_as_a_stated_rule(
    shared_data: Path, tmp_path: Path
) -> None:
    assert get_strategy("mixture-rules").judged
    store = ResultsStore(tmp_path / STORE_FILE)
    members = [member_run(store, model, shared_data) for model in ("a", "b", "c")]
    ran = run_bongard(
        "run",
        "--strategy",
        "mixture-rules",
        "--dataset",
        DATASET,
        "--problems",
        "1-2",
        "-S",
        f"members={','.join(members)}",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    mixture = store.resolve_run("latest")
    assert store.summary(mixture).calls == 0
    answers = {problem: answer for problem, _, answer in store.answer_records(mixture)}
    for number in (1, 2):
        answer = answers[f"{DATASET}/{number}"]
        texts = [STATED[model][number] for model in ("a", "b", "c")]
        scores = agreement(texts)
        best = scores.index(max(scores))
        assert answer.text == texts[best] and answer.details["chosen"] == members[best]
        assert [m["agreement"] for m in answer.details["members"]] == [round(s, 4) for s in scores]
    assert answers[f"{DATASET}/1"].details["chosen"] != members[2]  # the outlier is never the answer
    assert answers[f"{DATASET}/2"].left_rule is not None

    def judge(run: str) -> None:
        judged = run_bongard(
            "judge", run, "--judges", "embedding:0.6", "--policy", "vote:1", "--home", tmp_path
        )
        assert judged.returncode == 0, judged.stderr
        assert "2 answers judged" in " ".join(judged.stdout.split())

    def compared() -> str:
        done = run_bongard("compare", *members, mixture, "--out", tmp_path / "report", "--home", tmp_path)
        assert done.returncode == 0, done.stderr
        return " ".join(done.stdout.split())

    judge(mixture)
    assert "(agreement of 3)" not in compared()  # no row until the members are judged too
    for member in members:
        judge(member)
    ok = {
        run: [bool((decided := store.item_decision(run, f"{DATASET}/{n}", 0)) and decided[0]) for n in (1, 2)]
        for run in [*members, mixture]
    }
    oracle = sum(any(ok[run][i] for run in members) for i in range(2))
    said = compared()
    assert f"{mixture} (agreement of 3) on {DATASET}: mixture {sum(ok[mixture])}/2" in said
    assert f"any member {oracle}/2" in said
