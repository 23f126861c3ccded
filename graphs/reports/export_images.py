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
from collections.abc import Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

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
        """Whether the problem must be read at all."""
        return bool(self.images) or self.concept


@dataclass(frozen=True)
class DrawnImages:
    """What a worker drew for one problem: each image the calls sent as an attachment reference
    (`attachment://KEY`), the attachments (each data URL once, however many messages and events
    show it, as inspect's `EvalSample.attachments` holds them), and the concept where asked for."""

    urls: dict[tuple[str, ...], str] = field(default_factory=dict)
    attachments: dict[str, str] = field(default_factory=dict)
    concept: Concept | None = None


def dataset_settings(config: Mapping[str, Any]) -> str:
    """The part of a run's config that opens its dataset, as a drawing job carries it."""
    keys = ("dataset", "data_dir", "dataset_options")
    return json.dumps({key: config.get(key) for key in keys}, sort_keys=True)


@cache
def opened_dataset(settings: str) -> Dataset:
    """The dataset of `dataset_settings`, opened once in each process."""
    from datasets_io.catalog import open_run_dataset

    return open_run_dataset(json.loads(settings))


def draw(job: DrawingJob) -> DrawnImages:
    """Draw a job's images and read its concept (in a thread or a process)."""
    from datasets_io.render import png_bytes

    problem = opened_dataset(job.dataset).load(job.problem_id)
    drawn = DrawnImages(concept=problem.concept if job.concept else None)
    for refs in job.images:
        data = png_bytes(_image(problem, refs, job.variant), compress_level=EXPORT_PNG_LEVEL)
        name = hashlib.md5(data, usedforsecurity=False).hexdigest()
        drawn.attachments[name] = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        drawn.urls[refs] = ATTACHMENT + name
    return drawn


def _image(problem: BongardProblem, refs: tuple[str, ...], variant: Variant) -> Image.Image:
    """The image a call sent for these panels: the sheet where it holds several, else the panel."""
    from datasets_io.render import panel_image, render_sheet

    if len(refs) > 1:
        return render_sheet(problem, variant, max_side=EXPORT_IMAGE_SIDE)
    image = panel_image(next(p for p in problem.all_panels if p.ref == refs[0]), variant)
    image.thumbnail((EXPORT_IMAGE_SIDE, EXPORT_IMAGE_SIDE))
    return image


def drawing_pool(jobs: int, with_images: bool, processes: bool) -> Executor:
    """Processes, where allowed, for `PROCESSES_FROM` jobs or more with images, else threads.
    Processes are spawned, not forked (the exporting process may hold threads, which a fork does not
    copy), so each imports the main module again: allowed by `bongard export`, whose entry script
    guards its `main()`, and by callers that pass `processes=True` from a guarded script."""
    if processes and with_images and jobs >= PROCESSES_FROM and DRAWING_WORKERS > 1:
        return ProcessPoolExecutor(DRAWING_WORKERS, mp_context=multiprocessing.get_context("spawn"))
    return ThreadPoolExecutor(DRAWING_WORKERS, thread_name_prefix="bongard-export-draw")
