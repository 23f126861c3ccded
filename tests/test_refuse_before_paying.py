"""`bongard run` refuses what it cannot finish before anything is stored or paid for, and
`run --judges` prints the table judged (issue 31, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard


def perception_run(shared_data: Path, home: Path, *extra: str) -> list[str]:
    return [
        "run", "--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
        "--problems", "1-2", "--data-dir", str(shared_data), "--home", str(home), *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (
            ["--judges", "anthropic:claude-sonnet-4-5"],
            "provider anthropic needs a key in one of: ANTHROPIC_API_KEY",
        ),
        (["--judges", "embedding", "--policy", "most"], "unknown voting policy 'most'"),
        (["--judges", "embedding:0.01", "--policy", "vote:2"], "policy vote:2 needs 2 votes"),
        (["--judges", "embedding:0.1,embedding:0.1"], "judge embedding:0.1 is named twice"),
        (["--judges", "openai:o3", "-J", "temperature=0.5"], "temperature"),
    ],
    ids=["judge key", "policy", "vote", "judge twice", "judge decoding"],
)
def test_a_judging_that_cannot_happen_is_refused_before_the_run_is_stored(
    shared_data: Path, tmp_path: Path, extra: list[str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    ran = run_bongard(*perception_run(shared_data, tmp_path, *extra))
    assert ran.returncode == 2 and said in ran.stderr, ran.stderr
    assert not (tmp_path / STORE_FILE).exists() or not ResultsStore(tmp_path / STORE_FILE).run_ids()


def test_a_missing_key_for_the_model_stores_no_run(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = [
        "run", "--strategy", "direct", "--model", "openai:gpt-4o", "--dataset", "bongard-classic",
        "--problems", "1", "--data-dir", str(shared_data), "--home", str(tmp_path),
    ]  # fmt: skip
    ran = run_bongard(*args)
    assert ran.returncode == 2 and "provider openai needs a key in one of: OPENAI_API_KEY" in ran.stderr
    assert "run run-" not in ran.stdout  # no run was started, so none is named
    assert not (tmp_path / STORE_FILE).exists() or not ResultsStore(tmp_path / STORE_FILE).run_ids()


def test_run_with_judges_prints_the_judged_table(shared_data: Path, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    ran = run_bongard(*perception_run(shared_data, tmp_path, "--judges", "embedding:0.01"))
    assert ran.returncode == 0, ran.stderr
    judged_at = ran.stdout.index("answers judged")
    table = " ".join(ran.stdout[judged_at:].split())
    assert "│ 2 │ 2 │ 2 │ 0 │ 1.000" in table  # problems, n, solved, failed, accuracy: after judging
    assert "unjudged" not in ran.stdout[judged_at:]


def test_judge_latest_skips_a_run_another_process_is_writing_and_refuses_it_by_name(
    shared_data: Path, tmp_path: Path
) -> None:
    """It judged such a run's 0 answers, exit 0, no word."""
    import socket
    import subprocess

    assert run_bongard(*perception_run(shared_data, tmp_path)).returncode == 0
    finished = ResultsStore(tmp_path / STORE_FILE).resolve_run("latest")
    assert run_bongard(*perception_run(shared_data, tmp_path)).returncode == 0
    store = ResultsStore(tmp_path / STORE_FILE)
    writing = store.resolve_run("latest")
    with subprocess.Popen(["sleep", "60"]) as other:  # a live process of this host holds the run
        try:
            with store.transaction() as db:
                db.execute(
                    "UPDATE runs SET owner = ? WHERE id = ?", (f"{socket.gethostname()}:{other.pid}", writing)
                )
            judged = run_bongard("judge", "latest", "--judges", "embedding:0.01", "--home", tmp_path)
            assert judged.returncode == 0, judged.stderr
            assert (
                f"judging {finished}: {writing}, the latest, is being run by another process" in judged.stdout
            )
            assert store.judgings(writing) == [] and len(store.judgings(finished)) == 1
            named = run_bongard("judge", writing, "--judges", "embedding:0.01", "--home", tmp_path)
            assert (
                named.returncode == 2 and f"run {writing} is being run by process {other.pid}" in named.stderr
            )
        finally:
            other.kill()


def test_a_missing_provider_package_stores_no_run(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "langchain_ollama" else real(name, *a)
    )
    args = [
        "run", "--strategy", "direct", "--model", "ollama:llava", "--dataset", "bongard-classic",
        "--problems", "1", "--data-dir", str(shared_data), "--home", str(tmp_path),
    ]  # fmt: skip
    ran = run_bongard(*args)
    assert ran.returncode == 2, ran.stderr
    assert "provider ollama is not installed: pip install 'bongard-agents[ollama]'" in ran.stderr
    assert not (tmp_path / STORE_FILE).exists() or not ResultsStore(tmp_path / STORE_FILE).run_ids()
