"""`bongard export RUN --format inspect` writes a log inspect_ai reads back whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphs.runs.runner import RunConfig
from tests.cli import run_bongard
from tests.stored_runs import run_into_store

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log


def perception_run(home: Path, shared: Path, strategy: str, **settings: object) -> str:
    config = RunConfig(
        strategy=strategy,
        dataset="bongard-classic",
        data_dir=str(shared),
        agents={"reasoner": "perception", "describer": "perception"},
        problems=["1", "2"],
        **settings,
    )
    return run_into_store(home, config).run_id


def test_a_scored_run_becomes_an_eval_log_with_every_call_and_score(
    tmp_path: Path, shared_data: Path
) -> None:
    run_id = perception_run(
        tmp_path, shared_data, "images-to-sides", dataset_options={"holdout_test": "true"}
    )
    shown = run_bongard("export", run_id, "--out", tmp_path / "logs", "--home", tmp_path)
    assert shown.returncode == 0, shown.stderr
    log = read_eval_log(str(tmp_path / "logs" / f"{run_id}.eval"))
    assert (log.status, log.eval.task, log.eval.model) == ("success", "bongard/images-to-sides", "perception")
    assert sorted(str(s.id) for s in log.samples or []) == ["bongard-classic/1", "bongard-classic/2"]
    compared = run_bongard("compare", run_id, "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0
    solved = sum((s.scores or {})["solved"].value == "C" for s in log.samples or [])
    assert log.results is not None and log.results.scores[0].metrics["solved"].value == solved
    for sample in log.samples or []:
        assert json.loads(str(sample.target)) == {"left-test-5": "left", "right-test-5": "right"}
        assert [m.role for m in sample.messages] == ["user", "assistant"]  # images-to-sides: one call
        assert sample.messages[1].metadata and sample.messages[1].metadata["role"] == "reasoner"
        assert sample.output.completion == sample.messages[1].text  # the answer is the reply


def test_an_unjudged_run_exports_unscored_samples_not_wrong_ones(tmp_path: Path, shared_data: Path) -> None:
    run_id = perception_run(tmp_path, shared_data, "descriptive")
    assert run_bongard("export", "latest", "--out", tmp_path / "logs", "--home", tmp_path).returncode == 0
    log = read_eval_log(str(tmp_path / "logs" / f"{run_id}.eval"))
    samples = log.samples or []
    assert len(samples) == 2 and all(not s.scores for s in samples)
    assert all(len(s.messages) == 26 for s in samples)  # 13 calls: 12 panels and the answer
    assert all(str(s.target).startswith("Left: ") for s in samples)  # the true concept
    assert log.results is not None and log.results.scores[0].unscored_samples == 2
