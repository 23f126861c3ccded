"""The experiment page in a real browser at 1280 x 800: the grid fits the screen, and each cell
opens its run."""

from __future__ import annotations

import json
from pathlib import Path

from results.store import STORE_FILE
from tests.browser import CHROMIUM_ARGS, chromium_or_skip, screenshots, viewer_of
from tests.cli import run_bongard

GRID = """name = "offline-pair"
strategies = ["images-to-sides", "image-to-side"]
models = ["perception", "similarity"]
concurrency = 4
[[datasets]]
name = "bongard-rwr"
data_dir = "{data}"
problems = "1-6"
"""


def test_the_grid_fits_the_screen_and_each_cell_opens_its_run(shared_data: Path, tmp_path: Path) -> None:
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    path = tmp_path / "grid.toml"
    path.write_text(GRID.format(data=shared_data))
    home = tmp_path / "home"
    assert run_bongard("experiment", "run", path, "--home", home).returncode == 0
    listed = run_bongard("experiment", "list", "--json", "--home", home)
    runs = set(json.loads(listed.stdout)[0]["runs"].values())
    shots = screenshots(tmp_path)
    with viewer_of(home / STORE_FILE) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(base + "/experiments")
            page.click('a[href="/experiments/offline-pair"]')
            page.wait_for_url(f"{base}/experiments/offline-pair")
            page.screenshot(path=str(shots / "experiment-1280.png"), full_page=True)
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            cells = page.locator("table.experiment-grid td.cell a")
            assert cells.count() == 4
            assert page.locator("table.paired tbody tr").count() == 4
            opened = set()
            for index in range(4):
                page.goto(f"{base}/experiments/offline-pair")
                link = page.locator("table.experiment-grid td.cell a").nth(index)
                target = link.get_attribute("href") or ""
                link.click()
                page.wait_for_url(base + target)
                assert page.locator("h1").inner_text().startswith(target.rsplit("/", 1)[1])
                opened.add(target.rsplit("/", 1)[1])
            assert opened == runs
        finally:
            browser.close()
