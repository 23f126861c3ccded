"""A run with no stored item yet (interrupted at once) is read without a traceback or a 500 by every
report: compare, export, show, analyze and the viewer (issue 32, item 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard


@pytest.fixture
def empty_run(tmp_path: Path, shared_data: Path) -> str:
    store = ResultsStore(tmp_path / STORE_FILE)
    config = {
        "strategy": "images-to-sides",
        "dataset": "bongard-classic",
        "data_dir": str(shared_data),
        "agents": {"reasoner": "perception"},
    }
    run_id = store.create_run(config, "test")
    store.hold_run(run_id, planned=3)
    store.release_run(run_id, finished=False)
    return run_id


def test_the_reports_of_a_run_with_no_item_say_so_without_a_traceback(empty_run: str, tmp_path: Path) -> None:
    home = ("--home", tmp_path)
    compared = run_bongard("compare", empty_run, "--include-incomplete", "--out", tmp_path / "report", *home)
    assert compared.returncode == 0, compared.stderr
    assert "no stored item yet: nothing to tabulate or plot" in compared.stdout
    exported = run_bongard("export", empty_run, "--out", tmp_path / "logs", *home)
    assert exported.returncode == 0, exported.stderr
    for command in (("show", empty_run), ("runs", "show", empty_run), ("analyze", "categories", empty_run)):
        shown = run_bongard(*command, *home)
        assert shown.returncode == 0, (command, shown.stderr)


def test_the_viewer_shows_a_run_with_no_item_and_compares_it(empty_run: str, tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from graphs.view.app import create_app

    with TestClient(create_app(tmp_path / STORE_FILE), base_url="http://127.0.0.1") as client:
        for path in ("/", f"/runs/{empty_run}", f"/compare?runs={empty_run}", "/api/runs"):
            response = client.get(path)
            assert response.status_code == 200, (path, response.text[-500:])
        assert "no stored item yet" in client.get(f"/compare?runs={empty_run}").text


def test_the_runs_page_reads_the_runs_again_only_when_the_store_changed(
    empty_run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    import graphs.view.app as app
    from graphs.view.data import RunRow, run_rows

    reads: list[int] = []

    def counted(store: ResultsStore, *rest: Any) -> list[RunRow]:
        reads.append(1)
        return run_rows(store, *rest)

    monkeypatch.setattr(app, "run_rows", counted)
    with TestClient(app.create_app(tmp_path / STORE_FILE), base_url="http://127.0.0.1") as client:
        assert empty_run in client.get("/").text and empty_run in client.get("/api/runs").text
        assert len(reads) == 1  # the second page came from the cache
        writer = ResultsStore(tmp_path / STORE_FILE)
        another = writer.create_run(writer.run_config(empty_run), "test")
        assert another in client.get("/").text and len(reads) == 2  # a write: read again
