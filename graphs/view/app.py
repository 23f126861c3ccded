"""The viewer's web app (Starlette, server-rendered Jinja2 templates) and its server (uvicorn).

Read-only and local: the store is opened read-only (`ReadOnlyStore`), the server listens on
127.0.0.1 alone, requests naming another host are refused (no DNS rebinding), and pages carry a
content security policy that allows no script at all. Templates autoescape everything: prompts,
replies and judges' texts are untrusted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import sqlite3
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from datasets_io.errors import BongardError
from datasets_io.images import natural_key
from datasets_io.problem import own_id
from datasets_io.records import OUTPUT_MODE_WORDS, STOP_WORDS
from datasets_io.render import VARIANTS, Variant
from graphs.runs.provenance import provenance_lines
from graphs.view.data import (
    SHOWN,
    ResultRow,
    RunRow,
    Shown,
    fingerprint,
    item_rows,
    judging_stats,
    problem_attempts,
    problem_verdicts,
    result_rows,
    run_rows,
    verdict_counts,
)
from graphs.web import LOOPBACK, SecurityHeaders, bind, server
from judges.agreement import kappa_text
from results.experiments import ExperimentRecords
from results.grid_report import grid_report, stored_cells
from results.run_compatibility import short_spec
from results.store import ReadOnlyStore, StoreError
from results.studies import StudyRecords

if TYPE_CHECKING:
    import pandas as pd

    from datasets_io.catalog import Dataset
    from datasets_io.problem import BongardProblem
    from results.study_report import StudyTable

HERE = Path(__file__).parent
PLOTS = ("accuracy.png", "coverage.png", "any_vs_best.png", "cost_per_solved.png", "tokens_per_solved.png")
"""The PNG plots `results.report_figures.write_figures` draws, in the order the
compare page shows them."""
PANEL_SIDE = 256
IMAGES_KEPT = 64
REPORTS_KEPT = 16
SORTS: dict[str, Callable[[RunRow], Any]] = {
    "id": lambda row: row.summary.id,
    "created": lambda row: row.summary.created_at,
    "strategy": lambda row: row.strategy,
    "dataset": lambda row: row.dataset,
    "status": lambda row: row.summary.status,
    "solved": lambda row: row.result and row.result.solved,
    "accuracy": lambda row: row.result and row.result.accuracy.value,
    "cost": lambda row: row.summary.cost_usd,
    "time": lambda row: row.seconds,
}


class Viewer:
    """What the pages share: the store (opened when it exists), caches of rendered images and
    datasets, and the folder the comparison reports are written to."""

    def __init__(self, store_path: Path, cache_dir: Path) -> None:
        self.store_path = store_path
        self.cache_dir = cache_dir
        self._store: ReadOnlyStore | None = None
        self._opening = threading.Lock()
        self.drawing = threading.Lock()
        """matplotlib's pyplot is not thread-safe: one report is drawn at a time."""
        self.reports: dict[str, list[ResultRow]] = {}
        self.incomplete: dict[str, list[str]] = {}
        """Per report: the incomplete runs it counts, said above its table."""
        self.contrasts: dict[str, list[tuple[str, list[str]]]] = {}
        """Per report: the lines `bongard compare` prints under its table, by heading (published sets
        beside fresh problems, pixels beside symbols, mixtures beside their members)."""
        self.undrawn: dict[str, tuple[pd.DataFrame, pd.DataFrame]] = {}
        """Per report whose figures are not drawn yet: its table and problems, drawn when the page's
        first image is asked for, so the page itself comes without waiting on matplotlib."""
        self.undrawn_studies: dict[str, StudyTable] = {}
        """Per study page whose heat map is not drawn yet: its table."""
        self._images: OrderedDict[tuple[str, ...], bytes] = OrderedDict()
        self._datasets: dict[str, Dataset] = {}
        self._caching = threading.Lock()
        self._reading_rows = threading.Lock()
        self._rows: tuple[int, list[RunRow]] | None = None
        """Every run's row and the store's data version they were read at (under `_reading_rows`:
        a page asked for while the warm-up reads them waits for its rows, not reading them again
        beside it; at 50 runs that doubled a first click's wait)."""

    def store(self) -> ReadOnlyStore | None:
        """The store, or None while no run has created it."""
        with self._opening:
            if self._store is None and self.store_path.is_file():
                self._store = ReadOnlyStore(self.store_path)
            return self._store

    def every_run_row(self, store: ReadOnlyStore) -> list[RunRow]:
        """Every run's row, read again only when the store has changed since (SQLite's data_version)
        or a run is being run (its time and liveness move without a write): the runs page took 0.5 s
        at 50 runs on every request."""
        with self._reading_rows:
            version = store.data_version()
            if self._rows is not None and self._rows[0] == version:
                return self._rows[1]
            rows = run_rows(store)
            if not any(row.summary.status == "running" for row in rows):
                self._rows = (version, rows)
            return rows

    def require_store(self) -> ReadOnlyStore:
        store = self.store()
        if store is None:
            raise HTTPException(404, f"no results store at {self.store_path} yet")
        return store

    def run_id(self, store: ReadOnlyStore, run: str) -> str:
        try:
            return store.resolve_run(run)
        except StoreError as error:
            raise HTTPException(404, str(error)) from None

    def problem(self, config: Mapping[str, Any], key: str) -> BongardProblem:
        """The dataset problem behind a stored problem key (`dataset/id`), from the run's dataset."""
        name = json.dumps([config["dataset"], config.get("data_dir"), config.get("dataset_options")])
        with self._caching:
            dataset = self._datasets.get(name)
        if dataset is None:
            from datasets_io.catalog import open_run_dataset  # the loaders, on the first image or problem

            dataset = open_run_dataset(config)
            with self._caching:
                self._datasets[name] = dataset
        return dataset.problem(own_id(key, dataset.name))

    def image(self, config: Mapping[str, Any], key: str, what: str) -> bytes:
        """PNG bytes of a problem's sheet (`what` = "sheet") or of one panel (its ref), as the run's
        image variant shows them."""
        from datasets_io.render import panel_image, png_bytes, render_sheet

        variant = cast(Variant, config.get("variant") if config.get("variant") in VARIANTS else "plain")
        cached = (json.dumps([config["dataset"], config.get("data_dir")]), variant, key, what)
        with self._caching:
            if cached in self._images:
                self._images.move_to_end(cached)
                return self._images[cached]
        problem = self.problem(config, key)
        if what == "sheet":
            image = render_sheet(problem, variant)
        else:
            panel = next((p for p in problem.all_panels if p.ref == what), None)
            if panel is None:
                raise HTTPException(404, f"problem {key} has no panel {what}")
            image = panel_image(panel, variant)
            image.thumbnail((PANEL_SIDE, PANEL_SIDE))
        png = png_bytes(image)
        with self._caching:
            self._images[cached] = png
            while len(self._images) > IMAGES_KEPT:
                self._images.popitem(last=False)
        return png

    def close(self) -> None:
        with self._opening:
            if self._store is not None:
                self._store.close()
                self._store = None


def run_url(run_id: str) -> str:
    return f"/runs/{quote(run_id, safe='')}"


def problem_url(run_id: str, problem: str) -> str:
    return f"{run_url(run_id)}/{quote(problem, safe='/')}"


def sheet_url(run_id: str, problem: str) -> str:
    return f"/sheet/{quote(run_id, safe='')}/{quote(problem, safe='/')}"


def panel_url(run_id: str, problem: str, ref: str) -> str:
    return f"/panel/{quote(run_id, safe='')}/{quote(ref, safe='')}/{quote(problem, safe='/')}"


def compare_url(run_ids: Sequence[str], problem: str | None = None, page: int | None = None) -> str:
    query = [("runs", run_id) for run_id in run_ids] + ([("problem", problem)] if problem else [])
    return f"/compare?{urlencode(query + ([('page', str(page))] if page else []))}"


PROBLEMS_PER_PAGE = 200
"""Rows of the compare page's problem table at once: a run of thousands is paged, not drawn whole."""


def problems_page(names: Sequence[str], asked: str | None, problem: str | None) -> tuple[int, int]:
    """The page of the problem table to show (the one asked for, else the chosen problem's) and how
    many there are."""
    pages = max(1, -(-len(names) // PROBLEMS_PER_PAGE))
    if asked is not None and asked.isdigit():
        return min(max(int(asked), 1), pages), pages
    at = list(names).index(problem) if problem is not None and problem in names else 0
    return at // PROBLEMS_PER_PAGE + 1, pages


def query_url(request: Request, **changes: str | None) -> str:
    """This page's address with some query parameters changed (None removes one)."""
    params = {key: value for key, value in request.query_params.items() if key not in changes}
    params |= {key: value for key, value in changes.items() if value}
    return f"{request.url.path}?{urlencode(params)}" if params else request.url.path


def when(timestamp: float | None) -> str:
    return "-" if timestamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def when_short(timestamp: float | None) -> str:
    return "-" if timestamp is None else time.strftime("%m-%d %H:%M", time.localtime(timestamp))


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def money(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def templates() -> Jinja2Templates:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters |= {
        "when": when,
        "when_short": when_short,
        "duration": duration,
        "money": money,
        "pretty": pretty,
        "short_spec": short_spec,
        "kappa": kappa_text,
    }
    environment.globals |= {
        "run_url": run_url,
        "problem_url": problem_url,
        "sheet_url": sheet_url,
        "panel_url": panel_url,
        "compare_url": compare_url,
        "query_url": query_url,
        "stop_words": STOP_WORDS,
        "output_mode_words": OUTPUT_MODE_WORDS,
    }
    return Jinja2Templates(env=environment)


def viewer_of(request: Request) -> Viewer:
    return cast(Viewer, request.app.state.viewer)


def page(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    renderer = cast(Jinja2Templates, request.app.state.templates)
    context = {"store_path": viewer_of(request).store_path, **context}
    return renderer.TemplateResponse(request, name, context, status_code=status)


def runs_page(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.store()
    rows = viewer.every_run_row(store) if store is not None else []
    status = request.query_params.get("status", "")
    text = request.query_params.get("q", "").strip()
    sort = request.query_params.get("sort", "-created")
    key = SORTS.get(sort.lstrip("-"), SORTS["created"])
    shown = [row for row in rows if (not status or row.summary.status == status) and row.matches(text)]
    shown.sort(key=lambda row: (key(row) is not None, key(row) if key(row) is not None else 0))
    if sort.startswith("-"):
        shown.reverse()
    context = {"rows": shown, "total": len(rows), "status": status, "q": text, "sort": sort}
    return page(request, "runs.html", context | {"has_store": store is not None})


def runs_json(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.store()
    return JSONResponse([row.as_json() for row in viewer.every_run_row(store)] if store is not None else [])


def chosen_filter(request: Request) -> Shown:
    show = request.query_params.get("show", "all")
    if show not in SHOWN:
        raise HTTPException(400, f"unknown filter show={show!r}; filters: {', '.join(SHOWN)}")
    return show


def run_page(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.require_store()
    run_id = viewer.run_id(store, request.path_params["run_id"])
    show = chosen_filter(request)
    rows = item_rows(store, run_id)
    [row] = run_rows(store, [run_id])
    context = {
        "run": row,
        "items": [item for item in rows if item.shown(show)],
        "counts": verdict_counts(rows),
        "show": show,
        "filters": SHOWN,
        "judgings": store.judgings(run_id),
        "provenance": provenance_lines(store.provenance(run_id)),
    }
    return page(request, "run.html", context)


def run_json(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.require_store()
    run_id = viewer.run_id(store, request.path_params["run_id"])
    show = chosen_filter(request)
    [row] = run_rows(store, [run_id])
    provenance = store.provenance(run_id)
    items = [
        dataclasses.asdict(item) | {"verdict": item.verdict, "note": item.note}
        for item in item_rows(store, run_id)
        if item.shown(show)
    ]
    return JSONResponse(row.as_json() | {"provenance": provenance, "items": items})


def problem_page(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.require_store()
    run_id = viewer.run_id(store, request.path_params["run_id"])
    key = request.path_params["problem"]
    attempts = problem_attempts(store, run_id, key)
    if not attempts:
        raise HTTPException(404, f"run {run_id} has no item of problem {key!r}")
    config = store.run_config(run_id)
    problem: BongardProblem | None = None
    dataset_error = None
    try:
        problem = viewer.problem(config, key)
    except BongardError as error:
        dataset_error = str(error)
    problems = sorted({row.problem for row in item_rows(store, run_id)}, key=natural_key)
    at = problems.index(key)
    context = {
        "run_id": run_id,
        "config": config,
        "key": key,
        "problem": problem,
        "dataset_error": dataset_error,
        "attempts": attempts,
        "previous": problems[at - 1] if at > 0 else None,
        "next": problems[at + 1] if at + 1 < len(problems) else None,
    }
    return page(request, "problem.html", context)


def judgings_page(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.require_store()
    run_id = viewer.run_id(store, request.path_params["run_id"])
    return page(request, "judgings.html", {"run_id": run_id, "stats": judging_stats(store, run_id)})


def image_response(png: bytes) -> Response:
    return Response(png, media_type="image/png", headers={"cache-control": "max-age=600"})


def problem_image(request: Request, what: str) -> Response:
    viewer = viewer_of(request)
    store = viewer.require_store()
    run_id = viewer.run_id(store, request.path_params["run_id"])
    try:
        return image_response(viewer.image(store.run_config(run_id), request.path_params["problem"], what))
    except BongardError as error:  # the dataset moved, or the problem is not in it
        raise HTTPException(404, str(error)) from None


def sheet_png(request: Request) -> Response:
    return problem_image(request, "sheet")


def panel_png(request: Request) -> Response:
    return problem_image(request, request.path_params["ref"])


def experiments_page(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.store()
    records = ExperimentRecords(store) if store is not None else None
    listed = [records.get(name) for name in records.names()] if records is not None else []
    return page(request, "experiments.html", {"experiments": listed})


def experiment_page(request: Request) -> Response:
    """One experiment's grid: per dataset, strategies down and models across, each cell linking to
    its run."""
    viewer = viewer_of(request)
    store = viewer.require_store()
    name = request.path_params["name"]
    try:
        report = grid_report(store, stored_cells(store, name))
    except BongardError as error:
        raise HTTPException(404, str(error)) from None
    statuses = {row["run_id"]: store.summary(row["run_id"]).status for row in report.rows}
    grids = []
    for dataset in dict.fromkeys(row["dataset"] for row in report.rows):
        rows = [row for row in report.rows if row["dataset"] == dataset]
        strategies = list(dict.fromkeys(row["strategy"] for row in rows))
        models = list(dict.fromkeys(row["model"] for row in rows))
        cells = {(row["strategy"], row["model"]): row for row in rows}
        grids.append({"dataset": dataset, "strategies": strategies, "models": models, "cells": cells})
    context = {"name": name, "grids": grids, "tests": report.tests, "statuses": statuses}
    return page(request, "experiment.html", context)


def studies_page(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.store()
    listed = StudyRecords(store).all() if store is not None else []
    counts = (
        {study.name: len(StudyRecords(store).participants(study.name)) for study in listed} if store else {}
    )
    return page(request, "studies.html", {"studies": listed, "participants": counts})


def study_page(request: Request) -> Response:
    """A human study beside the model runs of its task, as paper 003's Figure 4 reads it."""
    from graphs.studies.comparison import compare_study
    from results.study_report import category_rows, one_side_only, solved_rows

    viewer = viewer_of(request)
    store = viewer.require_store()
    name = request.path_params["name"]
    try:
        found = compare_study(store, name)
    except StoreError as error:
        raise HTTPException(404, str(error)) from None
    key = fingerprint(store, [f"study:{name}", *(s.run_id for s in found.table.solvers())])
    with viewer.drawing:
        viewer.undrawn_studies[key] = found.table
    context = {
        "name": name,
        "found": found,
        "heat_map": f"/studies/{quote(name, safe='')}/{key}/heat-map.png",
        "solved": solved_rows(found.table).to_dict("records"),
        "categories": category_rows(found.table),
        "one_side": one_side_only(found.table).to_dict("records"),
    }
    return page(request, "study.html", context)


def study_heat_map(request: Request) -> Response:
    from results.study_report import draw_heat_map

    viewer = viewer_of(request)
    key = request.path_params["key"]
    if not re.fullmatch(r"[0-9a-f]{16}", key):
        raise HTTPException(404, "no such heat map (open the study's page again)")
    path = viewer.cache_dir / "studies" / f"{key}.png"
    with viewer.drawing:
        if (table := viewer.undrawn_studies.pop(key, None)) is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            draw_heat_map(table, path)
    if not path.is_file():
        raise HTTPException(404, "no such heat map (open the study's page again)")
    return FileResponse(path, media_type="image/png")


def compare_page(request: Request) -> Response:
    viewer = viewer_of(request)
    store = viewer.store()
    runs = []
    if store is not None:
        runs = [(run_id, store.run_config(run_id)) for run_id in reversed(store.run_ids())]
    chosen: list[str] = []
    for run in request.query_params.getlist("runs"):
        run_id = viewer.run_id(viewer.require_store(), run)
        if run_id not in chosen:
            chosen.append(run_id)
    context: dict[str, Any] = {
        "runs": runs,
        "chosen": chosen,
        "key": None,
        "error": None,
        "plots": PLOTS,
        "incomplete": [],
        "contrasts": [],
    }
    if store is None or not chosen:
        return page(request, "compare.html", context)
    try:
        key = fingerprint(store, chosen)
        with viewer.drawing:
            if key not in viewer.reports:
                from results.report import comparison_table, problems_frame
                from results.run_compatibility import select_runs

                # chosen by hand, so counted, but never as complete; never a mixed row
                viewer.incomplete[key] = select_runs(store, chosen, include_incomplete=True).incomplete
                from results.side_by_side import side_by_side_lines

                problems = problems_frame(store, chosen)
                table = comparison_table(problems)
                viewer.reports[key] = result_rows(table)
                viewer.undrawn[key] = (table, problems)
                viewer.contrasts[key] = side_by_side_lines(store, chosen, table)
                while len(viewer.reports) > REPORTS_KEPT:  # the oldest report goes, folder and all
                    oldest = next(iter(viewer.reports))
                    del viewer.reports[oldest]
                    viewer.incomplete.pop(oldest, None)
                    viewer.contrasts.pop(oldest, None)
                    viewer.undrawn.pop(oldest, None)
                    shutil.rmtree(viewer.cache_dir / oldest, ignore_errors=True)
        verdicts = problem_verdicts(store, chosen)
    except BongardError as error:
        return page(request, "compare.html", context | {"error": str(error)}, status=400)
    problem = request.query_params.get("problem") or next(
        (p for p, by_run in verdicts.items() if len(set(by_run.values())) > 1 or len(by_run) < len(chosen)),
        next(iter(verdicts), None),
    )
    side_by_side = (
        {run_id: item_rows(store, run_id, problem) for run_id in chosen} if problem is not None else {}
    )  # the chosen runs' items of one problem
    names = list(verdicts)
    number, pages = problems_page(names, request.query_params.get("page"), problem)
    shown = names[(number - 1) * PROBLEMS_PER_PAGE : number * PROBLEMS_PER_PAGE]
    context |= {
        "key": key,
        "table": viewer.reports[key],
        "incomplete": viewer.incomplete.get(key, []),
        "contrasts": viewer.contrasts.get(key, []),
        "verdicts": {name: verdicts[name] for name in shown},
        "problems": {
            "page": number,
            "pages": pages,
            "total": len(names),
            "first": (number - 1) * PROBLEMS_PER_PAGE + 1,
        },
        "problem": problem,
        "side_by_side": side_by_side,
        "sheet_run": next((run_id for run_id, items in side_by_side.items() if items), None),
        "configs": dict(runs),
    }
    return page(request, "compare.html", context)


def compare_plot(request: Request) -> Response:
    viewer = viewer_of(request)
    key, name = request.path_params["key"], request.path_params["name"]
    path = viewer.cache_dir / key / name
    if not re.fullmatch(r"[0-9a-f]{16}", key) or name not in PLOTS:
        raise HTTPException(404, "no such plot (compare the runs again)")
    with viewer.drawing:  # the first of a page's images draws them all
        if (undrawn := viewer.undrawn.pop(key, None)) is not None:
            from results.report_figures import write_figures

            path.parent.mkdir(parents=True, exist_ok=True)
            write_figures(*undrawn, path.parent)
    if not path.is_file():
        raise HTTPException(404, "no such plot (compare the runs again)")
    return FileResponse(path, media_type="image/png")


async def http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    return page(
        request, "error.html", {"status": error.status_code, "message": error.detail}, error.status_code
    )


async def toolkit_error(request: Request, error: Exception) -> Response:
    return page(request, "error.html", {"status": 500, "message": str(error)}, 500)


def create_app(store_path: Path, cache_dir: Path | None = None) -> Starlette:
    """The viewer of the store at `store_path` (it may not exist yet); reports go to `cache_dir`,
    by default a temporary folder removed when the app shuts down."""
    owned = cache_dir is None
    folder = Path(tempfile.mkdtemp(prefix="bongard-view-")) if cache_dir is None else cache_dir
    viewer = Viewer(store_path, folder)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            viewer.close()
            if owned:
                shutil.rmtree(folder, ignore_errors=True)

    routes = [
        Route("/", runs_page),
        Route("/api/runs", runs_json),
        Route("/api/runs/{run_id}", run_json),
        Route("/compare", compare_page),
        Route("/experiments", experiments_page),
        Route("/experiments/{name}", experiment_page),
        Route("/studies", studies_page),
        Route("/studies/{name}", study_page),
        Route("/studies/{name}/{key}/heat-map.png", study_heat_map),
        Route("/compare/{key}/{name}", compare_plot),
        Route("/sheet/{run_id}/{problem:path}", sheet_png),
        Route("/panel/{run_id}/{ref}/{problem:path}", panel_png),
        Route("/runs/{run_id}", run_page),
        Route("/runs/{run_id}/judgings", judgings_page),
        Route("/runs/{run_id}/{problem:path}", problem_page),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=[LOOPBACK, "localhost"]),
            Middleware(SecurityHeaders),
        ],
        exception_handlers={HTTPException: http_error, BongardError: toolkit_error},
        lifespan=lifespan,
    )
    app.state.viewer = viewer
    app.state.templates = templates()
    return app


def _warm_up(viewer: Viewer) -> None:
    """Read every run's row, then load the table and agreement libraries, while nobody waits: the
    runs page, a reader's first click, needs only the rows (0.1 s at 50 runs); pandas' import
    (0.3 s), which the compare page needs, would hold the interpreter that click waits on."""
    with contextlib.suppress(BongardError, sqlite3.Error):  # a page asked for reports it, not this
        store = viewer.store()
        if store is not None:
            viewer.every_run_row(store)
    import judges.agreement  # noqa: F401  (the judgings page's)
    import results.report  # noqa: F401  (the compare page's)


def serve(store_path: Path, port: int, announce: Callable[[str], None]) -> None:
    """Serve the viewer of the store on 127.0.0.1:`port` until Ctrl-C; `announce` gets its URL."""
    sock = bind(port)
    app = create_app(store_path)
    announce(f"http://{LOOPBACK}:{sock.getsockname()[1]}/")
    threading.Thread(
        target=_warm_up, args=(app.state.viewer,), name="bongard-view-warm-up", daemon=True
    ).start()
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn shuts down gracefully, then re-raises Ctrl-C
        server(app, sock).run(sockets=[sock])
