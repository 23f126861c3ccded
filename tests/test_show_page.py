"""`bongard show` reads what it prints: a page of items' answers, not every answer with its trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard, run_on_classic


def test_show_reads_only_the_answers_it_prints(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`show RUN` loaded every answer and its whole trace to print one page (489 MiB for a 65,000-call
    run); now it reads the page's answers alone, and the problem view its problem's."""
    ran = run_on_classic("1-12", shared_data, tmp_path, "--strategy", "descriptive", "--model", "perception")
    assert ran.returncode == 0, ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    page = store.answers_of(run_id, [("bongard-classic/2", 0), ("bongard-classic/10", 0)])
    assert sorted(page) == [("bongard-classic/10", 0), ("bongard-classic/2", 0)]
    assert all(answer.trace == [] and answer.text.startswith("Left:") for answer in page.values())

    def whole_run(self: ResultsStore, run_id: str) -> None:
        raise AssertionError("show read every answer of the run")

    monkeypatch.setattr(ResultsStore, "answer_records", whole_run)
    listed = run_bongard("show", "latest", "--per-page", "5", "--home", tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines() if "bongard-classic/" in line]
    assert len(lines) == 5 and all("Left:" in line for line in lines)
    assert "items 1-5 of 12; --page 2 shows the next" in listed.stdout
    one = run_bongard("show", "latest", "10", "--home", tmp_path)
    assert one.returncode == 0 and "answer:\nLeft:" in one.stdout and "11 calls" in one.stdout
