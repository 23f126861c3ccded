"""A run counts its items whose calls were refused, blocked or cut off apart from wrong answers and
format errors, in `run`, `runs show`, `show`, `compare`, the viewer and the inspect export, with
the provider's reason kept per call; each still counts as unsolved."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from datasets_io.records import StopKind
from results.report import comparison_table, problems_frame
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import REFUSAL_TEXT, OpenAIChat
from tests.standins.server import Fault, StandInServer

BOTH_LEFT = {"explanation": "", "concept": "", "answer": "LEFT"}
FINISHES = {0: "refusal", 1: "content_filter", 2: "length"}
"""The finish of the first three requests; the fourth reply holds no JSON, the last two are wrong."""
OUTCOMES = {"refused": 1, "blocked": 1, "cut off": 1, "format error": 1, "wrong": 2}


def both_left(body: Any) -> str:
    return json.dumps({"first": BOTH_LEFT, "second": BOTH_LEFT})


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> tuple[Path, str, str]:
    """A six-problem run through a stand-in that refuses, filters, cuts and garbles one reply each:
    the workspace, the run id and what `bongard run` printed."""
    home = tmp_path_factory.mktemp("stopped")
    with StandInServer(OpenAIChat(), both_left) as server:
        server.finisher = lambda index: FINISHES.get(index, "stop")
        server.fault_policy = lambda index: (
            Fault(rewrite=lambda _, text: "left, both") if index == 3 else None
        )
        ran = run_bongard(
            "run",
            "--strategy",
            "images-to-sides",
            "--model",
            f"openai-compatible:m@{server.url}/v1",
            "--dataset",
            "bongard-classic",
            "-O",
            "holdout_test=true",
            "--problems",
            "1-6",
            "--data-dir",
            shared_data,
            "--home",
            home,
        )
        assert ran.returncode == 0, ran.stderr
        assert len(list(server.model_requests())) == 6  # a stopped reply is an answer: not retried
    return home, ResultsStore(home / STORE_FILE).resolve_run("latest"), " ".join(ran.stdout.split())


def test_run_and_runs_show_count_each_stop_apart(stopped_run: tuple[Path, str, str]) -> None:
    home, run_id, printed = stopped_run
    said = "0 solved, 1 format errors, 1 refused, 1 blocked, 1 cut off;"
    assert said in printed
    assert said in " ".join(run_bongard("runs", "show", run_id, "--home", home).stdout.split())
    summary = ResultsStore(home / STORE_FILE).summary(run_id)
    assert (summary.format_errors, summary.stopped) == (1, {"refused": 1, "blocked": 1, "cut off": 1})
    assert (summary.solved, summary.scored) == (0, 6)  # a stopped item is still an unsolved one


def test_show_gives_each_items_outcome_and_each_calls_stop_with_the_providers_reason(
    stopped_run: tuple[Path, str, str],
) -> None:
    home, run_id, _ = stopped_run
    listed = run_bongard("show", run_id, "--home", home).stdout
    outcomes = re.findall(r"│ (refused|blocked|cut off|format error|wrong|solved) ", listed)
    assert {o: outcomes.count(o) for o in OUTCOMES} == OUTCOMES
    store = ResultsStore(home / STORE_FILE)
    calls = [(p, c) for p, _, _ in store.answer_records(run_id) for c in store.item_calls(run_id, p, 0)]
    stopped = {c.stop: p for p, c in calls}
    assert {c.output_mode for _, c in calls} == {"strict"}  # the sides schema fits the strict subset
    said: dict[StopKind | None, str] = {
        "refused": f"refused (refusal: {REFUSAL_TEXT})",
        "blocked": "blocked (finish_reason content_filter)",
        "cut": "cut off (finish_reason length)",
    }
    for stop, words in said.items():
        shown = run_bongard("show", run_id, stopped[stop].split("/")[1], "--calls", "--home", home).stdout
        assert f"attempt 0: {words.split(' (')[0]}" in shown and words in " ".join(shown.split())
        assert "(strict schema)" in shown  # how the schema went out


def test_compare_counts_the_unsolved_by_why(stopped_run: tuple[Path, str, str]) -> None:
    home, run_id, _ = stopped_run
    [row] = comparison_table(problems_frame(ResultsStore(home / STORE_FILE), [run_id])).to_dict("records")
    unsolved = {key: row[key] for key in ("format_errors", "refused", "blocked", "cut_off")}
    assert unsolved == {"format_errors": 1, "refused": 1, "blocked": 1, "cut_off": 1}
    assert (row["solved"], row["n"], row["accuracy"]) == (0, 6, 0.0)
    printed = run_bongard("compare", run_id, "--wide", "--home", home, "--out", home / "report").stdout
    assert re.search(r"\| *format_errors *\| *refused *\| *blocked *\| *cut_off *\|", printed), printed


def test_the_viewer_notes_and_filters_the_stopped_items(stopped_run: tuple[Path, str, str]) -> None:
    from starlette.testclient import TestClient

    from graphs.view.app import create_app

    home, run_id, _ = stopped_run
    with TestClient(create_app(home / STORE_FILE), base_url="http://127.0.0.1") as client:
        items = client.get(f"/api/runs/{run_id}").json()["items"]
        assert sorted(i["note"] for i in items if i["note"]) == [
            "blocked",
            "cut off",
            "format error",
            "refused",
        ]
        assert {i["verdict"] for i in items} == {"wrong"}
        stopped = client.get(f"/api/runs/{run_id}?show=stopped").json()["items"]
        assert sorted(i["outcome"] for i in stopped) == ["blocked", "cut off", "refused"]
        page = client.get(f"/runs/{run_id}").text
        assert "1 format errors, 1 refused, 1 blocked, 1 cut off" in page
        assert re.search(r"stopped <span class=\"count\">3</span>", page)
        [refused] = [i["problem"] for i in items if i["outcome"] == "refused"]
        shown = client.get(f"/runs/{run_id}/{refused}").text
        assert f"refused (refusal: {REFUSAL_TEXT})" in html.unescape(shown)


def test_the_inspect_export_says_each_samples_outcome_and_stop(stopped_run: tuple[Path, str, str]) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    home, run_id, _ = stopped_run
    assert run_bongard("export", run_id, "--out", home / "logs", "--home", home).returncode == 0
    log = read_eval_log(str(home / "logs" / f"{run_id}.eval"))
    samples = log.samples or []
    outcomes = [str((s.metadata or {})["outcome"]) for s in samples]
    assert {o: outcomes.count(o) for o in OUTCOMES} == OUTCOMES
    stops = {str((s.metadata or {})["outcome"]): s.output.choices[0].stop_reason for s in samples}
    assert stops["refused"] == stops["blocked"] == "content_filter" and stops["cut off"] == "max_tokens"
    assert stops["wrong"] == stops["format error"] == "stop"
    assert log.results is not None
    metrics = log.results.scores[0].metrics
    assert {name: metrics[name].value for name in ("refused", "blocked", "cut_off", "format_errors")} == {
        "refused": 1,
        "blocked": 1,
        "cut_off": 1,
        "format_errors": 1,
    }
