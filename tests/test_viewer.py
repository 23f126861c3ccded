"""`bongard view`: the results store in a local web page, read-only, on 127.0.0.1.

A store of real runs (the offline perception agent, judged by the offline embedding judge) and
runs made through the store API (interrupted, running, failed, with hostile text in them); the
viewer served by uvicorn in a thread; its pages read with httpx and in Debian's Chromium.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

import pytest

from datasets_io.records import Answer, CallTrace, Verdict
from results.store import STORE_FILE, ResultsStore, StoreError
from tests.browser import (
    CHROMIUM_ARGS,
    chromium_or_skip,
    first_line_of,
    listening_addresses,
    screenshots,
    viewer_of,
)
from tests.cli import BONGARD, run_bongard
from tests.test_startup import loaded_by

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import httpx
from markupsafe import escape

HOSTILE = "<script>alert('x')</script> & <b>bold</b>"
"""Untrusted text a model could reply: it must reach the page as text, never as markup."""


@dataclass(frozen=True)
class Runs:
    home: Path
    judged: str
    unjudged: str
    interrupted: str
    running: str
    failed: str

    @property
    def store(self) -> ResultsStore:
        return ResultsStore(self.home / STORE_FILE)


def perception_run(shared_data: Path, home: Path) -> str:
    ran = run_bongard(
        "run",
        "--strategy",
        "direct",
        "--model",
        "perception",
        "--dataset",
        "bongard-classic",
        "--problems",
        "1-3",
        "--data-dir",
        shared_data,
        "--home",
        home,
    )
    assert ran.returncode == 0, ran.stderr
    return ResultsStore(home / STORE_FILE).resolve_run("latest")


def stored_run(store: ResultsStore, shared_data: Path, strategy: str) -> str:
    config = {
        "strategy": strategy,
        "dataset": "bongard-classic",
        "data_dir": str(shared_data),
        "agents": {"reasoner": "scripted:model"},
    }
    return store.create_run(config, "test")


def answer(problem: str, text: str) -> Answer:
    call = CallTrace(
        role="reasoner",
        agent="scripted:model",
        task="answer",
        conversation="c1",
        step=0,
        images=[["left-1", "left-2", "right-1"]],
        prompt=f"Which rule? {HOSTILE}",
        reply=text,
        input_tokens=12,
        output_tokens=5,
        cost_usd=0.001,
        latency_s=0.25,
    )
    return Answer(strategy="open-ended", problem=problem, text=text, trace=[call])


@pytest.fixture(scope="module")
def runs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """A judged and an unjudged perception run (through the CLI), and an interrupted, a running and
    a failed run (through the store API), in one workspace."""
    pytest.importorskip("sentence_transformers")
    home = tmp_path_factory.mktemp("viewer-home")
    judged = perception_run(shared_data, home)
    for judges in ("embedding:0.01,embedding:0.02", "embedding:0.01"):
        judging = run_bongard("judge", judged, "--judges", judges, "--home", home)
        assert judging.returncode == 0, judging.stderr
    counted = run_bongard("runs", "count", judged, "strict|embedding:0.01@vote:1", "--home", home)
    assert counted.returncode == 0, counted.stderr  # the second counts: named, not by coming last
    unjudged = perception_run(shared_data, home)
    store = ResultsStore(home / STORE_FILE)
    interrupted = stored_run(store, shared_data, "open-ended")
    store.hold_run(interrupted, planned=5)
    store.save_item(interrupted, "bongard-classic/1", 0, answer("bongard-classic/1", HOSTILE), None)
    store.save_item(interrupted, "bongard-classic/2", 0, answer("bongard-classic/2", "Left: round"), None)
    store.save_item(interrupted, "bongard-classic/3", 0, None, "provider error: <timeout>")
    store.release_run(interrupted, finished=False)
    running = stored_run(store, shared_data, "open-ended-live")
    store.hold_run(running, planned=3)  # held by this process, alive: running
    store.save_item(running, "bongard-classic/1", 0, answer("bongard-classic/1", "Left: lines"), None)
    failed = stored_run(store, shared_data, "open-ended-failing")
    store.hold_run(failed, planned=2)
    store.save_item(failed, "bongard-classic/1", 0, answer("bongard-classic/1", "Left: dots"), None)
    store.save_item(failed, "bongard-classic/2", 0, None, "the model refused")
    store.release_run(failed, finished=True)
    return Runs(home, judged, unjudged, interrupted, running, failed)


@pytest.fixture(scope="module")
def base(runs: Runs) -> Iterator[str]:
    """The viewer of the workspace's store."""
    with viewer_of(runs.home / STORE_FILE) as url:
        yield url


def get(base: str, path: str, status: int = 200) -> httpx.Response:
    response = httpx.get(base + path, timeout=120)
    assert response.status_code == status, response.text
    return response


def row_of(html: str, run_id: str) -> str:
    """The runs page's row of one run."""
    match = re.search(rf'<tr class="run" data-run="{re.escape(run_id)}">(.*?)</tr>', html, re.S)
    assert match, f"no row of {run_id}"
    return match.group(1)


def test_the_runs_page_shows_each_run_with_its_status_and_an_unjudged_run_unjudged(
    runs: Runs, base: str
) -> None:
    html = get(base, "/").text
    statuses = {
        runs.judged: "complete", runs.unjudged: "complete", runs.interrupted: "interrupted",
        runs.running: "running", runs.failed: "partial",  # one item done, one failed
    }  # fmt: skip
    for run_id, status in statuses.items():
        assert f'<span class="status {status}">{status}</span>' in row_of(html, run_id)
    assert "unjudged" in row_of(html, runs.unjudged) and "unjudged" not in row_of(html, runs.judged)
    judged_row = row_of(html, runs.judged)
    assert '1.000<br><span class="muted">[0.439, 1.000]</span>' in judged_row  # 3 of 3, Wilson interval
    latest = "strict|embedding:0.01@vote:1"  # the judging that counts: its label, its name on hover
    assert f'title="{latest}">strict · 1 judge</a><br>vote:1 · <code' in judged_row
    listed = {row["id"]: row for row in get(base, "/api/runs").json()}
    assert {run_id: listed[run_id]["status"] for run_id in statuses} == statuses
    unjudged, judged = listed[runs.unjudged]["result"], listed[runs.judged]["result"]
    assert (unjudged["n"], unjudged["solved"], listed[runs.unjudged]["solved_text"]) == (0, None, "unjudged")
    assert (judged["n"], judged["solved"]) == (3, 3)
    assert judged["accuracy"] == {"value": 1.0, "low": 0.439, "high": 1.0}
    assert listed[runs.judged]["judging"] == "strict|embedding:0.01@vote:1"
    filtered = get(base, "/?status=interrupted").text
    assert runs.interrupted in filtered and runs.judged not in filtered
    assert runs.judged in get(base, f"/?q={runs.judged[-6:]}").text


def test_the_run_page_lists_each_attempt_with_its_verdict_and_filters_them(runs: Runs, base: str) -> None:
    def problems(run_id: str, show: str) -> list[str]:
        items = get(base, f"/api/runs/{run_id}?show={show}").json()["items"]
        return [f"{item['problem']}:{item['verdict']}" for item in items]

    solved = [f"bongard-classic/{n}:solved" for n in (1, 2, 3)]
    assert problems(runs.judged, "all") == solved and problems(runs.judged, "solved") == solved
    assert problems(runs.judged, "unsolved") == []
    assert problems(runs.unjudged, "unsolved") == [f"bongard-classic/{n}:unjudged" for n in (1, 2, 3)]
    assert problems(runs.interrupted, "failed") == ["bongard-classic/3:failed"]
    html = get(base, f"/runs/{runs.interrupted}?show=unsolved").text
    assert html.count('<tr class="item unjudged">') == 2 and "bongard-classic/3" not in html
    assert "provider error: &lt;timeout&gt;" in get(base, f"/runs/{runs.interrupted}?show=failed").text
    assert f"bongard run --resume {runs.interrupted}" in html
    assert "provenance: not recorded" in html  # a run stored without it says so
    get(base, f"/runs/{runs.judged}?show=nonsense", status=400)
    get(base, "/runs/run-that-is-not-there", status=404)


def test_the_sheet_is_served_as_a_png_the_size_the_renderer_draws(
    runs: Runs, base: str, shared_data: Path
) -> None:
    from PIL import Image

    from datasets_io.catalog import open_dataset
    from datasets_io.render import render_sheet

    response = get(base, f"/sheet/{runs.judged}/bongard-classic/2")
    assert response.headers["content-type"] == "image/png"
    image = Image.open(BytesIO(response.content))
    expected = render_sheet(open_dataset("bongard-classic", shared_data).problem("2"))
    assert (image.format, image.size) == ("PNG", expected.size)
    get(base, f"/sheet/{runs.judged}/bongard-classic/99999", status=404)


def test_a_problem_page_holds_every_call_the_answer_beside_the_concept_and_each_verdict(
    runs: Runs, base: str, shared_data: Path
) -> None:
    from datasets_io.catalog import open_dataset

    store = runs.store
    html = get(base, f"/runs/{runs.judged}/bongard-classic/2").text
    [(_, _, stored)] = [record for record in store.answer_records(runs.judged) if record[0].endswith("/2")]
    assert stored.trace
    for call in stored.trace:
        assert str(escape(call.prompt)) in html and str(escape(call.reply)) in html
        assert str(escape(call.agent)) in html and call.task in html
    assert html.count('<th>requests</th><td colspan="5">1 request</td>') == len(stored.trace)
    concept = open_dataset("bongard-classic", shared_data).problem("2").concept
    assert concept is not None
    assert str(escape(concept.left)) in html and str(escape(concept.stated_right)) in html
    assert str(escape(stored.text)) in html
    with store.reading() as db:
        verdicts = db.execute(
            "SELECT judging, judge, label, raw_text FROM verdicts WHERE run_id = ? AND problem = ?",
            (runs.judged, "bongard-classic/2"),
        ).fetchall()
    assert len(verdicts) == 3  # two judges in the first judging, one in the second
    for _, judge, label, raw_text in verdicts:
        assert judge in html and f'<span class="label {label}">{label}</span>' in html
        assert str(escape(raw_text)) in html
    assert "vote: 1 of 1 ok under vote:1" in html and "vote: 2 of 2 ok under vote:2" in html
    assert html.count('<span class="badge">counts</span>') == 1
    assert f'src="/sheet/{runs.judged}/bongard-classic/2"' in html


def test_untrusted_text_reaches_the_page_escaped_under_a_policy_that_allows_no_script(
    runs: Runs, base: str
) -> None:
    response = get(base, f"/runs/{runs.interrupted}/bongard-classic/1")
    assert "<script>" not in response.text and "<b>bold</b>" not in response.text
    assert str(escape(HOSTILE)) in response.text
    assert "[left-1, left-2, right-1]" in response.text  # a call's images: the panels behind each
    assert "script-src" not in response.headers["content-security-policy"]
    assert "default-src 'none'" in response.headers["content-security-policy"]
    assert httpx.get(base + "/", headers={"host": "attacker.example"}).status_code == 400  # no DNS rebinding


def test_the_compare_page_shows_the_table_the_plots_and_a_problem_across_the_runs(
    runs: Runs, base: str
) -> None:
    from PIL import Image

    chosen = f"runs={runs.judged}&runs={runs.interrupted}&runs={runs.running}"
    html = get(base, f"/compare?{chosen}&problem=bongard-classic/1").text
    table = html.split('<table class="compare">')[1].split("</table>")[0]
    assert table.count("<tr>") == 4  # the header and one row per strategy x model x dataset
    assert "1.000 [0.439, 1.000]" in table and "unjudged" in table  # the running run: nothing scored
    assert f"not complete, counted as far as it got: {runs.interrupted} (interrupted" in html
    assert f"{runs.running} (running" in html and f"{runs.judged} (" not in html.split("<h2")[0]
    [key] = re.findall(r'id="accuracy-plot" src="/compare/([0-9a-f]{16})/accuracy.png"', html)
    plot = get(base, f"/compare/{key}/accuracy.png")
    assert plot.headers["content-type"] == "image/png" and Image.open(BytesIO(plot.content)).width > 100
    side = html.split('id="side-by-side"')[1]
    assert runs.judged in side and runs.interrupted in side and runs.running in side
    assert str(escape(HOSTILE)) in side  # the interrupted run's answer to problem 1
    assert '<span class="verdict solved">solved</span>' in side
    assert '<span class="verdict unjudged">unjudged</span>' in side
    get(base, "/compare/0123456789abcdef/../../etc/passwd", status=404)
    assert "choose runs" in get(base, "/compare").text


def test_the_judgings_page_gives_agreement_and_an_undefined_kappa_where_every_label_is_one(
    runs: Runs, base: str
) -> None:
    html = get(base, f"/runs/{runs.judged}/judgings").text
    first, second = html.split('<section class="judging')[1:]
    assert "strict|embedding:0.01,embedding:0.02@vote:2" in first and "badge" not in first.split("</h2>")[0]
    assert "strict|embedding:0.01@vote:1" in second and '">counts</span>' in second
    assert "counts: named with `bongard runs count`" in second
    assert 'unanimity</th><td class="num">1.00' in first
    kappas = re.findall(r'<td class="num kappa">([^<]*)</td>', first)
    assert kappas == ["undefined", "undefined"]  # Fleiss' and Cohen's: every judge said ok
    assert "1.000" not in first and "One judge: no agreement to measure." in second
    assert "vote:2 <strong>3</strong>" in first
    assert "has not been judged" in get(base, f"/runs/{runs.unjudged}/judgings").text


def test_the_viewer_never_writes_the_store(runs: Runs) -> None:
    from results.store import ReadOnlyStore

    store = ReadOnlyStore(runs.home / STORE_FILE)
    assert store.summary(runs.judged).status == "complete"
    with pytest.raises(StoreError, match="readonly"):
        store.create_run({"strategy": "x", "dataset": "y", "agents": {}}, "test")
    store.close()


def test_bongard_view_has_help_and_serves_on_127_0_0_1_only(runs: Runs, tmp_path: Path) -> None:
    shown = run_bongard("view", "--help")
    assert shown.returncode == 0 and "127.0.0.1" in shown.stdout and "--port" in shown.stdout
    started = time.monotonic()
    with first_line_of([str(BONGARD), "view", "--home", str(runs.home), "--port", "0"]) as (_, line):
        [port] = re.findall(r"http://127\.0\.0\.1:(\d+)/ \(store .*read-only", line)
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=60).status_code == 200
        seconds = time.monotonic() - started
        print(f"bongard view answered its first page {seconds:.2f} s after it was started")
        assert seconds < 30
        assert listening_addresses(int(port)) == ["127.0.0.1"]
        taken = run_bongard("view", "--home", runs.home, "--port", port)
        assert taken.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in taken.stderr


def test_in_a_real_browser_a_reader_clicks_from_the_runs_to_a_problem_and_compares(
    runs: Runs, base: str, tmp_path: Path
) -> None:
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    shots = screenshots(tmp_path)
    [(_, _, stored)] = [r for r in runs.store.answer_records(runs.judged) if r[0] == "bongard-classic/2"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1680, "height": 1000})
            page.goto(base + "/")
            assert page.locator(f'tr[data-run="{runs.unjudged}"]').inner_text().count("unjudged") == 1
            page.screenshot(path=str(shots / "runs.png"), full_page=True)
            page.click(f'a[href="/runs/{runs.judged}"]')
            page.wait_for_url(f"{base}/runs/{runs.judged}")
            assert page.locator("tr.item.solved").count() == 3
            page.screenshot(path=str(shots / "run.png"), full_page=True)
            page.click(f'a[href="/runs/{runs.judged}/bongard-classic/2"]')
            page.wait_for_url(f"{base}/runs/{runs.judged}/bongard-classic/2")
            page.wait_for_load_state("load")
            assert page.eval_on_selector("#sheet", "image => image.complete && image.naturalWidth") > 0
            prompt = page.locator("pre.prompt").first
            assert prompt.is_visible() and prompt.inner_text().strip() == stored.trace[0].prompt.strip()
            verdict = page.locator("tr.verdict-row").first
            assert verdict.is_visible() and "ok" in verdict.inner_text()
            page.screenshot(path=str(shots / "problem.png"), full_page=True)
            page.goto(f"{base}/")
            page.check(f'input[value="{runs.judged}"]')
            page.check(f'input[value="{runs.interrupted}"]')
            page.click("text=compare the chosen runs")
            page.wait_for_load_state("load")
            loaded = "image => image.complete && image.naturalWidth"
            assert page.eval_on_selector("#accuracy-plot", loaded) > 0
            assert page.locator("#side-by-side").is_visible()
            page.screenshot(path=str(shots / "compare.png"), full_page=True)
            page.goto(f"{base}/runs/{runs.judged}/judgings")
            page.screenshot(path=str(shots / "judgings.png"), full_page=True)
        finally:
            browser.close()
    for name in ("runs", "run", "problem", "compare"):
        assert (shots / f"{name}.png").stat().st_size > 10_000


def test_the_view_command_loads_no_web_stack_until_it_runs() -> None:
    """`bongard --help` stays light: the viewer's web stack is imported by `bongard view` alone."""
    _, loaded = loaded_by("--help", wanted="name in ('starlette', 'uvicorn', 'jinja2', 'graphs.view.app')")
    assert loaded == []


RUNS_PAGE_PROBE = """
import json, sys
from pathlib import Path
from starlette.testclient import TestClient
from graphs.view.app import create_app
with TestClient(create_app(Path(sys.argv[1])), base_url="http://127.0.0.1") as client:
    page = client.get("/")
print(json.dumps({"status": page.status_code, "html": page.text, "pandas": "pandas" in sys.modules}))
"""


def test_the_runs_page_is_made_without_pandas(runs: Runs) -> None:
    """Its rows come from `report_rows` alone: pandas' import was most of a first visit's wait."""
    probe = [sys.executable, "-c", RUNS_PAGE_PROBE, str(runs.home / STORE_FILE)]
    shown = json.loads(subprocess.run(probe, capture_output=True, text=True, check=True).stdout)
    assert shown["status"] == 200 and not shown["pandas"]
    assert "unjudged" in row_of(shown["html"], runs.unjudged)
    summary = runs.store.summary(runs.judged)
    assert f">{summary.solved}<" in re.sub(r"\s+", "", row_of(shown["html"], runs.judged))


def test_a_workspace_without_a_store_shows_an_empty_viewer(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from graphs.view.app import create_app

    with TestClient(create_app(tmp_path / "none" / STORE_FILE), base_url="http://127.0.0.1") as client:
        assert "No results store at" in client.get("/").text
        assert client.get("/api/runs").json() == []
        assert client.get("/runs/latest").status_code == 404
        assert client.get("/compare").status_code == 200
    assert not (tmp_path / "none").exists()  # the viewer creates nothing


def test_without_the_view_extra_bongard_view_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "graphs.view.app", raising=False)
    for name in [name for name in sys.modules if name.split(".")[0] == "starlette"] or ["starlette"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    result = run_bongard("view", "--port", "0")
    assert result.returncode == 2
    assert "bongard view needs the `view` extra (starlette is missing)" in result.stderr
    assert "pip install 'bongard-agents[view]'" in result.stderr


def test_a_large_runs_compare_page_is_paged_and_its_figures_are_drawn_when_first_asked_for(
    tmp_path: Path,
) -> None:
    """450 problems: the problem table shows 200 at a time (the chosen problem's page unless one is
    asked for), and the page is served before any figure is drawn; the first image draws them all."""
    from starlette.testclient import TestClient

    from graphs.view.app import PLOTS, create_app

    store = ResultsStore(tmp_path / STORE_FILE)
    config = {"strategy": "images-to-sides", "dataset": "bongard-classic", "agents": {"reasoner": "m"}}
    run_id = store.create_run(config, "test")
    for number in range(1, 451):
        key = f"bongard-classic/{number}"
        answer = Answer(strategy="images-to-sides", problem=key, text="", correct=number % 3 == 0)
        store.save_item(run_id, key, 0, answer, None)
    store.release_run(run_id, finished=True)
    cache = tmp_path / "cache"
    with TestClient(create_app(tmp_path / STORE_FILE, cache), base_url="http://127.0.0.1") as client:

        def page(query: str) -> str:
            html = client.get(f"/compare?runs={run_id}{query}").text
            return html.split("<h2>Problems across the runs</h2>")[1].split("</table>")[0]

        first = page("")
        assert "problems 1-200 of 450, page 1 of 3" in first and first.count("<tr") == 201
        assert "next</a>" in first and "previous</a>" not in first
        assert not list(cache.rglob("*.png"))  # the page came without drawing
        assert "problems 401-450 of 450, page 3 of 3" in page("&page=3")
        assert "page 3 of 3" in page("&page=99") and "page 1 of 3" in page("&page=x")
        chosen = page("&problem=bongard-classic/300")
        assert "page 2 of 3" in chosen and '<tr class="chosen"><td class="name"><a' in chosen
        html = client.get(f"/compare?runs={run_id}").text
        [key] = re.findall(r'id="accuracy-plot" src="/compare/([0-9a-f]{16})/accuracy.png"', html)
        assert client.get(f"/compare/{key}/coverage.png").headers["content-type"] == "image/png"
        assert sorted(path.name for path in (cache / key).glob("*.png")) == sorted(PLOTS)
        assert client.get("/compare/0123456789abcdef/accuracy.png").status_code == 404


def test_the_compare_page_shows_every_figure_compare_writes() -> None:
    from graphs.view.app import PLOTS
    from results.report_figures import FIGURES

    assert tuple(f"{name}.png" for name in FIGURES) == PLOTS


def local_server(name: str, port: int) -> str:
    """A model spec as a local server has it, the way researchers run open models."""
    return f"openai-compatible:{name}@http://127.0.0.1:{port}/v1"


def judged_local_runs(home: Path, shared_data: Path, count: int) -> tuple[ResultsStore, str]:
    """`count` complete runs by two local servers, each judged by three local-server judges: the store
    and the judging's name (about 200 characters)."""
    store = ResultsStore(home / STORE_FILE)
    judges = [local_server(f"judge-{n}-qwen2.5-vl-72b-instruct-awq", 8100 + n) for n in range(3)]
    judging = f"strict|{','.join(judges)}"
    for index in range(count):
        agents = {
            "describer": local_server("llava-onevision-qwen2-72b-ov-chat-hf", 8000 + index),
            "reasoner": local_server("internvl2_5-78b-mpo-awq", 8050 + index),
        }
        config = {
            "strategy": "descriptive-iterative",
            "dataset": "bongard-classic",
            "data_dir": str(shared_data),
        }
        run_id = store.create_run({**config, "agents": agents}, "test")
        store.hold_run(run_id, planned=2)
        for problem in ("bongard-classic/1", "bongard-classic/2"):
            store.save_item(run_id, problem, 0, answer(problem, "Left: round\nRight: square"), None)
            verdicts = [Verdict(judge=judge, label="ok", raw_text="EVALUATION: OK") for judge in judges]
            store.save_judging(run_id, problem, 0, judging, "vote:2", problem.endswith("1"), verdicts)
        store.release_run(run_id, finished=True)
    return store, f"{judging}@vote:2"


def test_the_runs_page_fits_a_laptop_screen_with_local_server_specs(
    shared_data: Path, tmp_path: Path
) -> None:
    """At 1280 x 800 every column of the runs page is on screen without scrolling the page sideways,
    each row under 80 px: models by a short alias (the full spec on hover), the judging by a short
    label and the id `--judging` takes (its ~200-character name on hover)."""
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    from results.store import judging_id

    store, judging = judged_local_runs(tmp_path / "home", shared_data, 8)
    assert len(judging) > 200
    shots = screenshots(tmp_path)
    with viewer_of(store.path) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(base + "/")
            page.screenshot(path=str(shots / "runs-1280.png"), full_page=True)
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            assert page.eval_on_selector("div.scroll", "box => box.scrollWidth <= box.clientWidth")
            rights = page.eval_on_selector_all(
                "table.runs th", "cells => cells.map(c => c.getBoundingClientRect().right)"
            )
            assert len(rights) == 16 and max(rights) <= 1280
            heights = page.eval_on_selector_all(
                "tr.run", "rows => rows.map(r => r.getBoundingClientRect().height)"
            )
            assert len(heights) == 8 and max(heights) < 80, heights
            cell = page.locator("td.judging-name a").first
            assert cell.inner_text() == "strict · 3 judges" and cell.get_attribute("title") == judging
            shown = page.locator("td.judging-name").first.inner_text()
            assert shown.endswith(f"vote:2 · {judging_id(judging)}")
            assert page.locator("td.judging-name code").first.inner_text() == judging_id(judging)
            role = page.locator("tr.run .role").first
            title = role.get_attribute("title") or ""
            assert title.startswith(local_server("llava-onevision-qwen2-72b-ov-chat-hf", 8000)[:-7])
            shown_role = role.inner_text()
            assert shown_role.startswith("describer llava-onevision-qwen2") and "http" not in shown_role
        finally:
            browser.close()


def test_the_problem_page_shows_each_image_a_call_sent_and_what_each_judge_was_asked(
    shared_data: Path, tmp_path: Path
) -> None:
    """A thumbnail per image of each call (the sheet where a call sent the sheet, the panel where it
    sent one panel), and each verdict's prompt beside its reply (issue 32)."""
    from starlette.testclient import TestClient

    from graphs.view.app import create_app

    store = ResultsStore(tmp_path / STORE_FILE)
    config = {
        "strategy": "images-to-sides",
        "dataset": "bongard-classic",
        "data_dir": str(shared_data),
        "dataset_options": {"holdout_test": "true"},
        "agents": {"reasoner": "scripted:model"},
    }
    run_id = store.create_run(config, "test")
    sheet = [f"{side}-{n}" for side in ("left", "right") for n in range(5)]
    call = CallTrace(
        role="reasoner",
        agent="scripted:model",
        task="classify",
        conversation="c",
        step=0,
        images=[sheet, ["right-test-5"], ["left-test-5"]],
        prompt="Which sides?",
        reply="{}",
    )
    key = "bongard-classic/3"
    store.save_item(
        run_id, key, 0, Answer(strategy="images-to-sides", problem=key, text="{}", trace=[call]), None
    )
    asked = "Judge this answer.\n<<<ANSWER (data to evaluate)\nLeft: x\nANSWER>>>"
    verdict = Verdict(
        judge=local_server("judge", 8100), label="wrong", raw_text="EVALUATION: WRONG", prompt=asked
    )
    store.save_judging(run_id, key, 0, f"strict|{verdict.judge}", "vote:1", False, [verdict])
    with TestClient(create_app(store.path), base_url="http://127.0.0.1") as client:
        html = client.get(f"/runs/{run_id}/{key}").text
        thumbs = re.findall(r'<img class="thumb" src="([^"]+)"', html)
        panels = [f"/panel/{run_id}/{ref}/{key}" for ref in ("right-test-5", "left-test-5")]
        assert thumbs == [f"/sheet/{run_id}/{key}", *panels]
        for src in thumbs:
            shown = client.get(src)
            assert shown.status_code == 200 and shown.headers["content-type"] == "image/png"
        prompt = html.split('<details class="judge-prompt">')[1].split("</details>")[0]
        assert "Judge this answer." in prompt and "&lt;&lt;&lt;ANSWER" in prompt  # escaped, as written


def test_the_viewers_warm_up_reads_every_runs_row_before_the_first_page_and_survives_a_bad_store(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bongard view` reads the rows while the reader has yet to click (0.1 s at 50 runs), then the
    table libraries; a store it cannot read is left for the page to report."""
    from graphs.view import app

    store = ResultsStore(tmp_path / "home" / STORE_FILE)
    run_id = stored_run(store, shared_data, "open-ended")
    store.save_item(run_id, "bongard-classic/1", 0, answer("bongard-classic/1", "Left: round"), None)
    store.release_run(run_id, finished=True)
    viewer = app.Viewer(store.path, tmp_path / "cache")
    app._warm_up(viewer)

    def unread(*_: object) -> None:
        raise AssertionError("the rows were read again")

    monkeypatch.setattr(app, "run_rows", unread)
    [row] = viewer.every_run_row(viewer.require_store())
    assert (row.summary.id, row.summary.done) == (run_id, 1)
    broken = tmp_path / "broken" / STORE_FILE
    broken.parent.mkdir()
    broken.write_bytes(b"not a database" * 100)
    app._warm_up(app.Viewer(broken, tmp_path / "cache-2"))  # raises nothing


def test_a_page_asked_for_while_the_rows_are_read_waits_for_them_instead_of_reading_them_again(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader who clicks the URL at once met the warm-up reading the rows: both read them, each
    slowing the other (0.55 s at 50 runs, 0.13 s since)."""
    from graphs.view import app, data

    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = stored_run(store, shared_data, "open-ended")
    store.save_item(run_id, "bongard-classic/1", 0, answer("bongard-classic/1", "Left: round"), None)
    store.release_run(run_id, finished=True)
    viewer = app.Viewer(store.path, tmp_path / "cache")
    reading, reads = threading.Event(), []

    def slow_rows(read_from: ResultsStore) -> list[data.RunRow]:
        reads.append(threading.current_thread().name)
        reading.set()
        time.sleep(0.3)
        return data.run_rows(read_from)

    monkeypatch.setattr(app, "run_rows", slow_rows)
    warm_up = threading.Thread(target=app._warm_up, args=(viewer,), name="warm-up")
    warm_up.start()
    assert reading.wait(10)
    [row] = viewer.every_run_row(viewer.require_store())  # asked while the warm-up reads
    warm_up.join(30)
    assert reads == ["warm-up"] and row.summary.id == run_id
