"""`bongard export RUN --format inspect` writes a log inspect_ai reads back whole."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from graphs.runs.runner import RunConfig
from tests.cli import run_bongard
from tests.stored_runs import run_into_store

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelConfig


def perception_run(home: Path, shared: Path, strategy: str, **settings: object) -> str:
    config = RunConfig(
        strategy=strategy,
        dataset="bongard-classic",
        data_dir=str(shared),
        agents={"reasoner": "perception", "describer": "perception"},
        **({"problems": ["1", "2"]} | settings),
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
    assert [s.id for s in log.samples or []] == [1, 2]
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


def models_by_role(roles: Mapping[str, ModelConfig | list[ModelConfig]] | None) -> dict[str, str]:
    """The log's model roles as role -> model (a role of one model each, as the export writes them)."""
    return {role: config.model for role, config in (roles or {}).items() if isinstance(config, ModelConfig)}


def test_the_log_carries_each_calls_images_events_and_roles_in_problem_number_order(
    tmp_path: Path, shared_data: Path
) -> None:
    """Issue 32: read back by inspect_ai, each prompt holds the images its call sent (the sheet, then
    the two test panels), each call is a model event of its role, the roles are the log's model
    roles, and problem 10 comes after problem 2."""
    import base64
    import io

    from inspect_ai.event import ModelEvent
    from inspect_ai.model import ContentImage, ContentText
    from PIL import Image

    from datasets_io.catalog import open_dataset
    from datasets_io.render import render_sheet
    from graphs.reports.export_images import EXPORT_IMAGE_SIDE
    from graphs.reports.inspect_export import export_run
    from results.store import STORE_FILE, ResultsStore

    config = RunConfig(
        strategy="images-to-sides",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        agents={"reasoner": "perception"},
        problems=["10", "2", "1"],
        dataset_options={"holdout_test": "true"},
    )
    run_id = run_into_store(tmp_path, config).run_id
    assert run_bongard("export", run_id, "--out", tmp_path / "logs", "--home", tmp_path).returncode == 0
    log = read_eval_log(str(tmp_path / "logs" / f"{run_id}.eval"), resolve_attachments=True)
    samples = log.samples or []
    assert [s.id for s in samples] == [1, 2, 10]  # numbered problems by number (the dataset is the log's)
    assert [(s.metadata or {})["problem"] for s in samples] == [f"bongard-classic/{n}" for n in (1, 2, 10)]
    assert models_by_role(log.eval.model_roles) == {"reasoner": "perception"}
    ten = open_dataset("bongard-classic", shared_data, {"holdout_test": "true"}).problem("10")
    for sample in samples:
        content = sample.messages[0].content
        assert isinstance(content, list) and isinstance(content[0], ContentText)
        shown = [block.image for block in content[1:] if isinstance(block, ContentImage)]
        assert len(shown) == 3 and all(image.startswith("data:image/png;base64,") for image in shown)
        [event] = [e for e in sample.events if isinstance(e, ModelEvent)]
        assert event.role == "reasoner" and event.input[-1].content == content
        assert event.output.completion == sample.messages[1].text
    first = samples[2].messages[0].content[1]
    assert isinstance(first, ContentImage)
    with zipfile.ZipFile(tmp_path / "logs" / f"{run_id}.eval") as log_zip:
        written = log_zip.read("samples/10_epoch_1.json").decode()
    # each image is written once, as an attachment, though the prompt and the model event both show it
    assert written.count("data:image/png;base64,") == 3 and written.count("attachment://") == 6
    store = ResultsStore(tmp_path / STORE_FILE)
    as_json = export_run(store, run_id, tmp_path / "json", log_format="json")
    whole = read_eval_log(str(as_json), resolve_attachments=True)
    assert [s.messages[0].content for s in whole.samples or []] == [s.messages[0].content for s in samples]
    sheet = Image.open(io.BytesIO(base64.b64decode(first.image.split(",")[1])))
    expected = render_sheet(ten, max_side=EXPORT_IMAGE_SIDE)
    assert sheet.size == expected.size and sheet.convert("RGB").tobytes() == expected.convert("RGB").tobytes()


def test_the_judges_of_the_judging_that_counts_are_model_roles(tmp_path: Path, shared_data: Path) -> None:
    pytest.importorskip("sentence_transformers")
    run_id = perception_run(tmp_path, shared_data, "direct")
    judged = run_bongard(
        "judge", run_id, "--judges", "embedding:0.01,embedding:0.02", "--policy", "vote:1", "--home", tmp_path
    )
    assert judged.returncode == 0, judged.stderr
    assert run_bongard("export", run_id, "--out", tmp_path / "logs", "--home", tmp_path).returncode == 0
    roles = models_by_role(
        read_eval_log(str(tmp_path / "logs" / f"{run_id}.eval"), header_only=True).eval.model_roles
    )
    assert {role: model for role, model in roles.items() if role.startswith("judge")} == {
        "judge-1": "embedding:0.01", "judge-2": "embedding:0.02",
    }  # fmt: skip


def test_sample_ids_sort_as_inspect_sorts_them_in_problem_order() -> None:
    from graphs.reports.inspect_export import sample_id

    assert [sample_id(f"bongard-classic/{n}") for n in (1, 2, 10)] == [1, 2, 10]
    hoi = [sample_id(f"bongard-hoi/test_seen_obj_seen_act-{n}") for n in (10, 2)]
    assert sorted(str(i) for i in hoi) == ["test_seen_obj_seen_act-000002", "test_seen_obj_seen_act-000010"]


def test_no_images_leaves_the_prompts_text_only(tmp_path: Path, shared_data: Path) -> None:
    """For runs of thousands: drawing each problem's images costs about 15 ms a problem."""
    run_id = perception_run(
        tmp_path, shared_data, "images-to-sides", dataset_options={"holdout_test": "true"}
    )
    out = tmp_path / "logs"
    assert run_bongard("export", run_id, "--out", out, "--no-images", "--home", tmp_path).returncode == 0
    for sample in read_eval_log(str(out / f"{run_id}.eval")).samples or []:
        content = sample.messages[0].content
        assert isinstance(content, list) and [block.type for block in content] == ["text"]


def test_the_eval_writer_flushes_on_the_way_and_json_holds_the_same_samples(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """inspect's recorder compares each sample with every one buffered, so the writer flushes every
    `FLUSH_EVERY` samples (here every one); the json log holds the same samples in one document."""
    from graphs.reports import inspect_export
    from results.store import STORE_FILE, ResultsStore

    run_id = perception_run(tmp_path, shared_data, "descriptive")
    store = ResultsStore(tmp_path / STORE_FILE)
    monkeypatch.setattr(inspect_export, "FLUSH_EVERY", 1)
    eval_path = inspect_export.export_run(store, run_id, tmp_path / "eval", images=False)
    json_path = inspect_export.export_run(store, run_id, tmp_path / "json", images=False, log_format="json")
    assert (eval_path.suffix, json_path.suffix) == (".eval", ".json")
    written, whole = read_eval_log(str(eval_path)), read_eval_log(str(json_path))
    assert [s.id for s in written.samples or []] == [s.id for s in whole.samples or []] == [1, 2]
    assert [len(s.messages) for s in written.samples or []] == [len(s.messages) for s in whole.samples or []]
    assert written.status == whole.status == "success"


def test_the_export_lets_go_of_an_items_images_once_its_sample_is_made(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `.eval` log is streamed: images are drawn a few items ahead and dropped behind, so a run of
    thousands never holds all its drawn sheets at once."""
    import gc
    import weakref

    from graphs.reports import inspect_export
    from graphs.reports.export_images import DrawingJob, DrawnImages, draw
    from results.store import STORE_FILE, ResultsStore

    config = RunConfig(
        strategy="images-to-sides",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        agents={"reasoner": "perception"},
        problems=["1", "2", "3", "4", "5", "6"],
        dataset_options={"holdout_test": "true"},
    )
    run_id = run_into_store(tmp_path, config).run_id
    made: dict[str, weakref.ref[DrawnImages]] = {}

    def watched(job: DrawingJob) -> DrawnImages:
        drawn = draw(job)
        made[job.problem_id] = weakref.ref(drawn)
        return drawn

    monkeypatch.setattr(inspect_export, "draw", watched)
    monkeypatch.setattr(inspect_export, "DRAWN_AHEAD", 1)
    _, samples = inspect_export.logged_run(ResultsStore(tmp_path / STORE_FILE), run_id)
    written = [next(samples) for _ in range(4)]
    gc.collect()
    held = [problem for problem, drawn in made.items() if drawn() is not None]
    assert sorted(made)[:4] == ["1", "2", "3", "4"] and not set(held) & {"1", "2", "3"}  # the rest: ahead
    assert all(sample.attachments for sample in written)  # the samples keep what they show


def test_a_large_export_draws_in_processes_the_same_images_and_reports_a_missing_panel_in_one_line(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From `PROCESSES_FROM` items with images the sheets are drawn in spawned processes (here from
    one item): the log is the one threads draw, and a panel gone since the run is a located error."""
    import shutil

    from datasets_io.errors import DatasetError
    from graphs.reports import export_images, inspect_export
    from results.store import STORE_FILE, ResultsStore

    data = tmp_path / "data"
    shutil.copytree(shared_data / "bongard-classic", data / "bongard-classic")
    config = RunConfig(
        strategy="images-to-sides",
        dataset="bongard-classic",
        data_dir=str(data),
        agents={"reasoner": "perception"},
        problems=["1", "2", "3"],
        dataset_options={"holdout_test": "true"},
    )
    run_id = run_into_store(tmp_path, config).run_id
    store = ResultsStore(tmp_path / STORE_FILE)
    by_threads = read_eval_log(str(inspect_export.export_run(store, run_id, tmp_path / "threads")))
    monkeypatch.setattr(export_images, "PROCESSES_FROM", 1)
    pools: list[str] = []
    choosing = export_images.drawing_pool

    def chosen(jobs: int, with_images: bool, processes: bool) -> object:
        pool = choosing(jobs, with_images, processes)
        pools.append(type(pool).__name__)
        return pool

    monkeypatch.setattr(inspect_export, "drawing_pool", chosen)
    assert read_eval_log(str(inspect_export.export_run(store, run_id, tmp_path / "threads-2"))).samples
    assert pools == ["ThreadPoolExecutor"]  # unless the caller allows processes
    exported = inspect_export.export_run(store, run_id, tmp_path / "processes", processes=True)
    by_processes = read_eval_log(str(exported))
    assert pools == ["ThreadPoolExecutor", "ProcessPoolExecutor"]
    drawn, again = by_threads.samples or [], by_processes.samples or []
    assert [s.attachments for s in again] == [s.attachments for s in drawn] and len(drawn) == 3
    shown = [[m.content for m in s.messages] for s in drawn]
    assert [[m.content for m in s.messages] for s in again] == shown
    panel = data / "bongard-classic" / "002" / "2.png"
    panel.unlink()
    with pytest.raises(DatasetError, match=r"problem 2, file .*002: missing image 2\."):
        inspect_export.export_run(store, run_id, tmp_path / "broken", processes=True)


def test_the_attempts_of_a_problem_share_one_drawing_of_its_images(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--attempts 3` drew each sheet three times (3.0x the drawing CPU): the attempts of a problem
    come together in the log and send the same images, so they are drawn once and shown by all."""
    from graphs.reports import inspect_export
    from graphs.reports.export_images import DrawingJob, DrawnImages, draw
    from results.store import STORE_FILE, ResultsStore

    config = RunConfig(
        strategy="images-to-sides",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        agents={"reasoner": "perception"},
        problems=["1", "2", "3", "4"],
        dataset_options={"holdout_test": "true"},
        attempts=3,
    )
    run_id = run_into_store(tmp_path, config).run_id
    drawn: list[str] = []

    def counted(job: DrawingJob) -> DrawnImages:
        drawn.append(job.problem_id)
        return draw(job)

    monkeypatch.setattr(inspect_export, "draw", counted)
    log = read_eval_log(
        str(inspect_export.export_run(ResultsStore(tmp_path / STORE_FILE), run_id, tmp_path / "x"))
    )
    assert sorted(drawn) == ["1", "2", "3", "4"]
    assert log.samples is not None and len(log.samples) == 12
    by_problem: dict[str, list[set[str]]] = {}
    for sample in log.samples:
        by_problem.setdefault(str(sample.id), []).append(set(sample.attachments))
    assert all(
        len(shown) == 3 and shown[0] and shown[0] == shown[1] == shown[2] for shown in by_problem.values()
    )


def test_messages_and_events_are_named_not_given_random_ids(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """inspect draws a random id for each message and event made without one: 27 % of a 65,000-call
    export. Each is named from its sample and call, so none is drawn and one run exports one log."""
    import inspect_ai.event._base as event_base
    import inspect_ai.model._chat_message as chat_message

    from graphs.reports import inspect_export
    from results.store import STORE_FILE, ResultsStore

    run_id = perception_run(tmp_path, shared_data, "descriptive", attempts=2)

    def no_random_id() -> str:
        raise AssertionError("a random id was drawn")

    monkeypatch.setattr(chat_message, "uuid", no_random_id)
    monkeypatch.setattr(event_base, "uuid", no_random_id)
    store = ResultsStore(tmp_path / STORE_FILE)
    logs = [
        read_eval_log(str(inspect_export.export_run(store, run_id, tmp_path / name, log_format="json")))
        for name in ("first", "second")
    ]
    first, second = (
        [[m.id for m in sample.messages] + [e.uuid for e in sample.events] for sample in log.samples or []]
        for log in logs
    )
    every = [name for sample in first for name in sample]
    assert first == second and len(every) == len(set(every)) and len(first) == 4
    assert every[0] == "1#1/1/prompt" and every[-1] == "2#2/13/event"


STAMPS = re.compile(rb'"(timestamp|working_start)": ?("[^"]*"|[0-9.e-]+)')


def unstamped(path: Path) -> bytes:
    """A log without when its events were written down: the only bytes two exports of one run differ in."""
    return STAMPS.sub(rb'"\1": 0', path.read_bytes())


def test_the_json_log_is_written_sample_by_sample_as_inspect_writes_it_whole(
    tmp_path: Path, shared_data: Path
) -> None:
    """The `.json` log is streamed (it held every sample: 2.6 GB for 5,000 descriptive items) and is
    the document inspect's `write_eval_log` makes of the same log, byte for byte; with attempts,
    inspect orders the samples by epoch, the stream by problem (attempts together)."""
    from inspect_ai.log import write_eval_log

    from graphs.reports import inspect_export
    from results.store import STORE_FILE, ResultsStore

    for attempts in (1, 2):
        home = tmp_path / str(attempts)
        run_id = perception_run(home, shared_data, "descriptive", attempts=attempts)
        store = ResultsStore(home / STORE_FILE)
        header, samples = inspect_export.logged_run(store, run_id)
        whole = home / "whole.json"
        write_eval_log(header.model_copy(update={"samples": list(samples)}), str(whole), format="json")
        streamed = inspect_export.export_run(store, run_id, home / "streamed", log_format="json")
        if attempts == 1:
            assert unstamped(streamed) == unstamped(whole)
            continue
        documents = [json.loads(unstamped(path)) for path in (whole, streamed)]
        orders = [[(s["id"], s["epoch"]) for s in document["samples"]] for document in documents]
        assert orders == [[(1, 1), (2, 1), (1, 2), (2, 2)], [(1, 1), (1, 2), (2, 1), (2, 2)]]
        by_item = [sorted(d.pop("samples"), key=lambda s: (s["epoch"], s["id"])) for d in documents]
        assert by_item[0] == by_item[1] and documents[0] == documents[1]


@pytest.mark.parametrize("strategy", ["descriptive", "images-to-sides"])
def test_samples_made_without_validation_are_what_inspect_validates_them_into(
    tmp_path: Path, shared_data: Path, strategy: str
) -> None:
    """The export makes its messages, events and samples without validating them (`_made`): each
    sample's JSON is the JSON of the sample inspect validates from it."""
    from inspect_ai._util.json import to_json_safe
    from inspect_ai.log import EvalSample

    from graphs.reports import inspect_export
    from results.store import STORE_FILE, ResultsStore

    settings = {"dataset_options": {"holdout_test": "true"}} if strategy == "images-to-sides" else {}
    run_id = perception_run(tmp_path, shared_data, strategy, **settings)
    _, samples = inspect_export.logged_run(ResultsStore(tmp_path / STORE_FILE), run_id)
    for sample in samples:
        made = to_json_safe(sample)
        assert to_json_safe(EvalSample.model_validate_json(made)) == made


def test_an_export_reads_its_run_a_few_items_at_a_time(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory bounded by a few items: answers, calls and decisions are read `READ_TOGETHER` items at a
    time, never the whole run's traces at once; the cycle collector is back on afterwards."""
    import gc

    from graphs.reports import inspect_export
    from results.store import STORE_FILE, ResultsStore

    run_id = perception_run(tmp_path, shared_data, "descriptive", problems=["1", "2", "3"])
    read: list[int] = []
    reading = ResultsStore.calls_of

    def counted(self: ResultsStore, run: str, items: list[tuple[str, int]]) -> object:
        read.append(len(items))
        return reading(self, run, items)

    def whole_run(*_: object) -> None:
        raise AssertionError("an export read every answer with its trace at once")

    monkeypatch.setattr(ResultsStore, "calls_of", counted)
    monkeypatch.setattr(ResultsStore, "answer_records", whole_run)
    monkeypatch.setattr(inspect_export, "READ_TOGETHER", 2)
    for log_format in ("eval", "json"):
        path = inspect_export.export_run(
            ResultsStore(tmp_path / STORE_FILE), run_id, tmp_path / log_format, log_format=log_format
        )
        log = read_eval_log(str(path))
        assert [s.id for s in log.samples or []] == [1, 2, 3]
        assert all(len(s.messages) == 26 for s in log.samples or [])  # 13 calls: prompt and reply
        assert gc.isenabled()
    assert read == [2, 1, 2, 1]


def test_concepts_come_from_the_survey_the_run_kept_not_from_each_problem_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Bongard-RWR+ run keeps its dataset's survey; exporting its free-form answers takes each
    target concept from it (reading 5,000 problems' folders again was 1.8 s), and reads a problem
    only where no current survey is kept."""
    from graphs.reports import inspect_export
    from results.store import STORE_FILE, ResultsStore
    from tests.builders import aged
    from tests.rwr_plus_releases import LABELS, counted_loads, upstream_folders, write_labels

    upstream_folders(tmp_path / "data" / "bongard-rwr-plus", [1, 2])
    write_labels(tmp_path / "data" / "labels.csv", LABELS)
    aged(tmp_path / "data")  # written before the run: its survey is kept
    config = RunConfig(
        strategy="direct",
        dataset="bongard-rwr-plus",
        data_dir=str(tmp_path / "data"),
        agents={"reasoner": "perception"},
    )
    run_id = run_into_store(tmp_path, config).run_id
    loads = counted_loads(monkeypatch)
    store = ResultsStore(tmp_path / STORE_FILE)
    targets = []
    for kept in (True, False):
        if not kept:
            shutil.rmtree(tmp_path / "surveys")
        path = inspect_export.export_run(store, run_id, tmp_path / f"kept-{kept}", images=False)
        targets.append([s.target for s in read_eval_log(str(path)).samples or []])
        assert loads == ([] if kept else ["1", "2"])
    assert (
        targets[0]
        == targets[1]
        == ["Left: Circles / Right: Squares", "Left: Open figures / Right: Closed figures"]
    )


def test_the_eval_log_is_the_one_inspects_own_sample_buffering_writes(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `.eval` writer appends each sample to the recorder's buffer itself (its `log_sample`
    compares each one with every one buffered): the log is member for member the one `log_sample`
    makes, summaries included, flushed on the way and with attempts."""
    from functools import partial

    from graphs.reports import inspect_export
    from results.store import STORE_FILE, ResultsStore

    run_id = perception_run(tmp_path, shared_data, "descriptive", attempts=2)
    store = ResultsStore(tmp_path / STORE_FILE)
    monkeypatch.setattr(inspect_export, "FLUSH_EVERY", 3)
    appended = inspect_export.export_run(store, run_id, tmp_path / "appended")
    monkeypatch.setattr(
        inspect_export, "_sample_buffer", lambda recorder, spec: partial(recorder.log_sample, spec)
    )
    logged = inspect_export.export_run(store, run_id, tmp_path / "logged")
    members = [_members(path) for path in (appended, logged)]
    assert members[0] == members[1]
    assert sum(name.startswith("samples/") for name in members[0]) == 4
    assert any(name.startswith("_journal/summaries/") for name in members[0])


def _members(log: Path) -> dict[str, bytes]:
    """Each member of a `.eval` zip, without when its events were written down."""
    with zipfile.ZipFile(log) as log_zip:
        return {name: STAMPS.sub(rb'"\1": 0', log_zip.read(name)) for name in log_zip.namelist()}
