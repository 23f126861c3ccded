"""The generation graph through its driver: interrupt for review, resume from stored decisions, the
automatic review, and a dataset the loader reads back. Recording agents stand in for the models
(named `scripted:*`); the images come from the deterministic shapes generator, the embeddings from
the weight-free classical embedder, the checkpoints and reviews from real SQLite files."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents import registry
from agents.provider import Provider
from agents.registry import register_provider
from datasets_io.catalog import open_dataset
from datasets_io.generation.generated import Pool
from graphs.generation.graph import GenerationSettings, ReviewVerdict, checked_decisions, image_id
from graphs.generation.run import GenerationConfig, resume_generation, start_generation
from results.reviews import GenerationRecords
from results.store import ResultsStore, StoreError
from tests.scripted import Request, RequestLog, Script, ScriptedChatModel

SOURCES = ["6", "31"]  # triangles vs quadrangles; one line vs two lines
IMAGES_PER_SIDE = 6  # 5 context panels and the held-out test panel of a classic problem


def side_read_off(request: Request) -> ReviewVerdict:
    """The review judge's verdict: the side the scripted description names (`described ['left-...']`)."""
    return ReviewVerdict(explanation="scripted", verdict="left" if "['left" in request.text() else "right")


@pytest.fixture
def requests() -> Iterator[RequestLog]:
    """A recording provider `scripted:ROLE`, registered for this test only."""
    log = RequestLog()
    model = ScriptedChatModel(requests=log, script=Script("scripted", {ReviewVerdict: side_read_off}))
    register_provider(
        Provider(
            name="scripted", summary="records requests", build=lambda m, p: model, reads_call_metadata=True
        )
    )
    yield log
    registry.PROVIDERS._entries.pop("scripted")


def config(tmp_path: Path, shared_data: Path, review: str = "human", **settings: Any) -> GenerationConfig:
    roles = ("describer", "augmenter") + (("reviewer", "review_judge") if review == "auto" else ())
    return GenerationConfig(
        source="bongard-classic",
        data_dir=str(shared_data),
        dataset_options={"holdout_test": "true"},
        problems=SOURCES,
        agents={role: f"scripted:{role}" for role in roles},
        generator="shapes",
        embedder="classical",
        settings=GenerationSettings(
            folder=str(tmp_path / "generated"),
            variations=2,
            panels=2,
            subsets=2,
            review=review,
            size=96,
            **settings,
        ),
    )


def tasks(log: RequestLog) -> list[str]:
    return [request.call.task for request in log]


def test_the_graph_stops_for_review_then_resumes_from_stored_decisions(
    requests: RequestLog, tmp_path: Path, shared_data: Path
) -> None:
    store, home = ResultsStore(tmp_path / "home" / "store.sqlite"), tmp_path / "home"
    job = start_generation(config(tmp_path, shared_data), store, home)
    first = asyncio.run(job.run())
    per_source = 2 * IMAGES_PER_SIDE
    assert first.awaiting == {s: per_source * 2 for s in SOURCES} and first.built == [] and not first.complete
    assert (
        tasks(requests).count("describe") == 2 * per_source
        and tasks(requests).count("generate") == 2 * per_source
    )
    describe = next(r for r in requests if r.call.task == "describe")
    assert len(describe.images) == 1 and describe.call.extra["concept"] in {
        "Triangles",
        "Quadrangles",
        "One line",
        "Two lines",
    }
    records = GenerationRecords(store)
    pending = records.reviews(job.id)
    assert len(pending) == 2 * per_source * 2 and all(r.decision is None for r in pending)
    rendered = sorted((tmp_path / "generated" / "pool").rglob("*.png"))
    assert len(rendered) == len(pending)
    stamps = {path: path.stat().st_mtime_ns for path in rendered}

    again = asyncio.run(resume_generation(job.id, store, home).run())  # nothing decided yet
    assert again.awaiting == first.awaiting and len(requests) == 4 * per_source

    rejected = {r.image_id for r in pending if r.image_id % 10000 == 2}  # variant 2 of each side's image 0
    decisions = {r.image_id: "none" if r.image_id in rejected else r.side for r in pending}
    records.decide(job.id, decisions, "human")  # type: ignore[arg-type]
    done = asyncio.run(resume_generation(job.id, store, home).run())
    assert done.complete and set(done.built) == set(SOURCES) and done.problems == 2 * 2 * 2
    assert len(requests) == 4 * per_source  # resumed from the checkpoints: no model call made again
    assert {p: p.stat().st_mtime_ns for p in rendered} == stamps  # and no image rendered again

    pool = Pool.read(tmp_path / "generated")
    assert {i.image_id for i in pool.images if not i.accepted} == rejected
    assert [c.row for c in pool.concepts] == [0, 1] and pool.concepts[1].left == "One line"
    dataset = open_dataset(f"bongard-rwr-plus:{tmp_path / 'generated'}")
    problems = dataset.scan(open_images=True).problems
    assert len(problems) == 8 and {p.concept.left for p in problems if p.concept} == {"Triangles", "One line"}
    for problem in problems:
        assert problem.panels_per_side == 2 and len(problem.test_panels) == 2
        image_ids = problem.metadata["image_ids"]
        assert isinstance(image_ids, dict)
        assert not {i for side in image_ids.values() if isinstance(side, list) for i in side} & rejected


def test_the_automatic_review_describes_each_image_and_judges_it(
    requests: RequestLog, tmp_path: Path, shared_data: Path
) -> None:
    store, home = ResultsStore(tmp_path / "home" / "store.sqlite"), tmp_path / "home"
    job = start_generation(config(tmp_path, shared_data, review="auto"), store, home)
    status = asyncio.run(job.run())
    assert status.complete and status.awaiting == {}
    images = 2 * 2 * IMAGES_PER_SIDE * 2
    reviews = [
        r
        for r in requests
        if "review" in r.call.extra.get("concepts", ["review"])[0] or r.call.task == "judge"
    ]
    judged = [r for r in requests if r.call.task == "judge"]
    assert len(judged) == images and len(reviews) >= images
    assert all(r.images == [] and "Description: " in r.text() for r in judged)  # the judge sees text only
    assert (
        tasks(requests).count("describe") == 2 * 2 * IMAGES_PER_SIDE + images
    )  # prompts, then re-descriptions
    stored = GenerationRecords(store).reviews(job.id)
    assert len(stored) == images and {r.reviewer for r in stored} == {
        "auto: scripted:reviewer described, scripted:review_judge judged"
    }
    pool = Pool.read(tmp_path / "generated")
    assert all(
        i.decision == i.side for i in pool.images
    )  # the scripted judge reads the side off the description
    assert status.problems == 2 * 2 * 2


def test_decisions_must_cover_every_image_and_name_a_side() -> None:
    with pytest.raises(ValueError, match=r"missing for images \[2\]"):
        checked_decisions({"1": "left"}, {1, 2})
    with pytest.raises(ValueError, match=r"not left/right/none: \{1: 'up'\}"):
        checked_decisions({"1": "up", "2": "none"}, {1, 2})
    assert checked_decisions({"1": "left", "2": "none"}, {1, 2}) == {1: "left", 2: "none"}


def test_image_ids_are_unique_per_row_side_image_and_variant() -> None:
    ids = {
        image_id(row, side, index, variant)
        for row in range(3)
        for side in ("left", "right")
        for index in range(7)
        for variant in range(1, 16)
    }
    assert len(ids) == 3 * 2 * 7 * 15


def test_a_review_of_an_unknown_image_is_refused(tmp_path: Path) -> None:
    records = GenerationRecords(ResultsStore(tmp_path / "store.sqlite"))
    generation = records.create({"settings": {}})
    with pytest.raises(StoreError, match="has no images 7 to review"):
        records.decide(generation, {7: "left"}, "human")
    assert json.loads(json.dumps(records.config(generation))) == {"settings": {}}
