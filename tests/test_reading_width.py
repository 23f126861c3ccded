"""Results read at a glance: `bongard compare` prints 120 columns at most (`--wide`: every one), the
figures' labels never overprint where a dataset is given as a long path, the compare page fits a
1280-pixel screen, and a run on a dataset given as a path is judged, shown and viewed like any."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from graphs.view.app import compare_url, sheet_url
from results.report import write_report
from results.store import STORE_FILE, ResultsStore
from tests.browser import CHROMIUM_ARGS, chromium_or_skip, viewer_of
from tests.cli import run_bongard

LONG = "a/researchers/long/folder/of/problems/my-own-copy-of-the-classic-bongard-problems"


@dataclass(frozen=True)
class Workspace:
    home: Path
    runs: list[str]
    by_path: str
    """The run whose dataset was given as a long path."""


@pytest.fixture(scope="module")
def workspace(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """Four runs of the offline agent, one on the classic problems through a long folder path."""
    home = tmp_path_factory.mktemp("width")
    copy = home / LONG
    copy.parent.mkdir(parents=True)
    copy.symlink_to(shared_data / "bongard-classic")
    runs = [
        ("direct", "bongard-classic", "--judges", "embedding:0.3"),
        ("images-to-sides", "bongard-classic", "-O", "holdout_test=true"),
        ("images-to-sides", str(copy), "-O", "holdout_test=true"),
        ("direct", str(copy), "--judges", "embedding:0.3"),
    ]
    for strategy, dataset, *more in runs:
        ran = run_bongard(
            "run", "--strategy", strategy, "--model", "perception", "--dataset", dataset,
            "--problems", "1-3", "--data-dir", shared_data, "--home", home, *more,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
    store = ResultsStore(home / STORE_FILE)
    ids = store.run_ids()
    [by_path] = [
        r
        for r in ids
        if (store.run_config(r)["dataset"], store.run_config(r)["strategy"]) == (str(copy), "direct")
    ]
    return Workspace(home, ids, by_path)


def test_compare_prints_at_most_120_columns_and_every_column_when_wide(workspace: Workspace) -> None:
    compared = run_bongard("compare", "--out", workspace.home / "report", "--home", workspace.home)
    assert compared.returncode == 0, compared.stderr
    lines = compared.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    header = next(line for line in lines if "accuracy [95% CI]" in line)
    assert header.split() == ["strategy", "model", "dataset", "n", "solved", "accuracy", "[95%", "CI]",
                              "refused", "failed", "cost"]  # fmt: skip
    assert any("…-classic-bongard-problems " in line for line in lines)  # a path keeps its end
    assert "image_accuracy" not in compared.stdout
    wide = run_bongard("compare", "--wide", "--out", workspace.home / "wide", "--home", workspace.home)
    assert wide.returncode == 0 and "image_accuracy" in wide.stdout and "tokens_per_solved" in wide.stdout
    assert str(workspace.home / LONG) in wide.stdout  # the wide table and the files hold names whole


def test_no_two_x_axis_labels_of_a_figure_overprint(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: dict[str, list[Bbox]] = {}
    save = Figure.savefig

    def measured(figure: Figure, path: Any, **options: Any) -> None:
        save(figure, path, **options)
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        labels = [t for axes in figure.axes for t in axes.get_xticklabels() if t.get_text()]
        drawn[Path(path).stem] = [label.get_window_extent(renderer) for label in labels]

    monkeypatch.setattr(Figure, "savefig", measured)
    store = ResultsStore(workspace.home / STORE_FILE)
    write_report(store, workspace.runs, tmp_path)
    for name in ("accuracy", "any_vs_best", "cost_per_solved", "tokens_per_solved"):
        boxes = sorted(drawn[name], key=lambda box: box.x0)
        assert len(boxes) >= 2, name
        for left, right in pairwise(boxes):
            assert left.x1 <= right.x0, f"{name}: labels overprint"


def test_a_run_on_a_dataset_given_as_a_path_is_judged_shown_and_viewed(workspace: Workspace) -> None:
    store = ResultsStore(workspace.home / STORE_FILE)
    summary = store.summary(workspace.by_path)
    assert summary.scored == 3  # judged: each problem found in the dataset its key names
    [key, *_] = [problem for problem, _, _ in store.answer_records(workspace.by_path)]
    assert key == f"{workspace.home / LONG}/1"
    shown = run_bongard("show", workspace.by_path, key, "--home", workspace.home)
    assert shown.returncode == 0 and "true concept: Left:" in shown.stdout, shown.stderr
    with viewer_of(workspace.home / STORE_FILE) as base:
        sheet = httpx.get(base + sheet_url(workspace.by_path, key), timeout=120)
    assert sheet.status_code == 200 and sheet.headers["content-type"] == "image/png"


def test_the_compare_page_fits_1280_pixels(workspace: Workspace, tmp_path: Path) -> None:
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with viewer_of(workspace.home / STORE_FILE) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(base + compare_url(workspace.runs, f"{workspace.home / LONG}/1"))
            page.screenshot(path=str(tmp_path / "compare-1280.png"), full_page=True)
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            assert page.locator("table.compare tbody tr").count() == 4
        finally:
            browser.close()
