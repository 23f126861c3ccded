"""The images an exported run's calls sent, drawn again for its inspect log.

Drawing is most of an export's time (a sheet a problem), so it runs beside the writing: in threads
(Pillow lets go of the interpreter while it decodes, scales and encodes), and for `bongard export`
in processes from `PROCESSES_FROM` items with images, where each sheet's Python would otherwise wait
on the writer's. This module imports neither inspect_ai nor pandas, so a drawing process starts light.
"""

from __future__ import annotations

import base64
import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache, cached_property, partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datasets_io.catalog import Dataset
    from datasets_io.problem import BongardProblem, Concept
    from datasets_io.render import Variant

ATTACHMENT = "attachment://"
"""How inspect's logs refer to a sample's attachment (`read_eval_log(..., resolve_attachments=True)`)."""
EXPORT_PNG_LEVEL = 1
"""zlib level of the exported PNGs: a sheet of Bongard-RWR photos 12.6 ms against 29.3 ms at level 6,
254 kB against 238 kB."""
EXPORT_IMAGE_SIDE = 512
"""Longest side of an image in an exported log: enough to read a sheet, a log of thousands stays small."""
DRAWING_WORKERS = min(8, os.cpu_count() or 1)
"""Threads or processes drawing: a sheet of real photos takes 76 ms here, 38 ms a problem in two threads."""
DRAWN_AHEAD = 4 * DRAWING_WORKERS
"""Items whose images are drawn ahead of the sample being written (what bounds the images held)."""
PROCESSES_FROM = 500
"""Items with images from which they are drawn in processes: below it a process's start (0.3 s of
imports) costs more than it saves; above it threads stall on the interpreter the writer holds (5,000
small sheets: 36 s in two threads)."""


class SampleImages:
    """The images of one problem as its calls sent them, drawn once each, kept as the sample's
    attachments (each data URL once, however many messages and events show it)."""

    def __init__(self, load: Callable[[], BongardProblem], variant: Variant, *, drawn: bool = True) -> None:
        """`load` reads the problem when first needed (an image to draw, a concept for the target);
        `drawn`: False leaves every image out (`bongard export --no-images`)."""
        self._load, self.variant, self.drawn = load, variant, drawn
        self._drawn: dict[tuple[str, ...], str] = {}
        self._concept: tuple[Concept | None] | None = None
        self.attachments: dict[str, str] = {}
        """Attachment key -> data URL, as inspect's `EvalSample.attachments` holds them."""

    @cached_property
    def problem(self) -> BongardProblem:
        return self._load()

    @property
    def concept(self) -> Concept | None:
        """The problem's concept: as a drawing worker read it, else read now."""
        return self._concept[0] if self._concept is not None else self.problem.concept

    def url(self, refs: list[str]) -> str:
        """The image a call sent for these panels (the sheet where it holds several, else the panel),
        as a reference to the sample's attachment (`attachment://KEY`)."""
        from datasets_io.render import panel_image, png_bytes, render_sheet

        key = tuple(refs)
        if key not in self._drawn:
            if len(refs) > 1:
                image = render_sheet(self.problem, self.variant, max_side=EXPORT_IMAGE_SIDE)
            else:
                image = panel_image(
                    next(p for p in self.problem.all_panels if p.ref == refs[0]), self.variant
                )
                image.thumbnail((EXPORT_IMAGE_SIDE, EXPORT_IMAGE_SIDE))
            data = png_bytes(image, compress_level=EXPORT_PNG_LEVEL)
            name = hashlib.md5(data, usedforsecurity=False).hexdigest()
            self.attachments[name] = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
            self._drawn[key] = ATTACHMENT + name
        return self._drawn[key]

    def made(self, concept: bool) -> DrawnImages:
        """What was drawn, and the concept where it was asked for, to hand to the writer's copy."""
        return DrawnImages(
            dict(self._drawn), dict(self.attachments), self.problem.concept if concept else None, concept
        )

    def accept(self, drawn: DrawnImages) -> None:
        """What a drawing worker made for this problem."""
        self._drawn |= drawn.urls
        self.attachments |= drawn.attachments
        if drawn.concept_read:
            self._concept = (drawn.concept,)


@dataclass(frozen=True)
class DrawingJob:
    """One problem's images to draw and whether its concept is wanted, in terms a process can take."""

    dataset: str
    """The run's dataset settings as JSON (`dataset`, `data_dir`, `dataset_options`)."""
    problem_id: str
    variant: Variant
    images: tuple[tuple[str, ...], ...]
    concept: bool

    @property
    def needed(self) -> bool:
        return bool(self.images) or self.concept


@dataclass(frozen=True)
class DrawnImages:
    urls: dict[tuple[str, ...], str] = field(default_factory=dict)
    attachments: dict[str, str] = field(default_factory=dict)
    concept: Concept | None = None
    concept_read: bool = False


def dataset_settings(config: Mapping[str, Any]) -> str:
    """The part of a run's config that opens its dataset, as a drawing job carries it."""
    keys = ("dataset", "data_dir", "dataset_options")
    return json.dumps({key: config.get(key) for key in keys}, sort_keys=True)


def draw(job: DrawingJob) -> DrawnImages:
    """Draw a job's images (in a thread or a process; the dataset is opened once in each)."""
    images = SampleImages(partial(_dataset(job.dataset).load, job.problem_id), job.variant)
    for refs in job.images:
        images.url(list(refs))
    return images.made(job.concept)


@cache
def _dataset(settings: str) -> Dataset:
    from datasets_io.catalog import open_run_dataset

    return open_run_dataset(json.loads(settings))


def drawing_pool(jobs: int, with_images: bool, processes: bool) -> Executor:
    """Processes, where allowed, for `PROCESSES_FROM` jobs or more with images, else threads.
    Processes are spawned, not forked (the exporting process may hold threads, which a fork does not
    copy), so each imports the main module again: allowed by `bongard export`, whose entry script
    guards its `main()`, and by callers that pass `processes=True` from a guarded script."""
    if processes and with_images and jobs >= PROCESSES_FROM and DRAWING_WORKERS > 1:
        return ProcessPoolExecutor(DRAWING_WORKERS, mp_context=multiprocessing.get_context("spawn"))
    return ThreadPoolExecutor(DRAWING_WORKERS, thread_name_prefix="bongard-export-draw")
