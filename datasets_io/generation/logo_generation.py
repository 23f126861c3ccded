"""Fresh Bongard-LOGO problems from the authors' own generator, in their published layout.

PyPI `bongard` 0.0.2 is Bongard-LOGO's generator (NVlabs, MIT): a free-form problem's seven positives
share one stroke program and its seven negatives each perturb it; a basic problem's positives show
one shape (or two) that each negative swaps for another of its super class; an abstract problem's
positives are shapes with an attribute (or two) that its negatives lack. Basic and abstract problems
need the authors' shape tables, read from the user's checkout (`datasets_io.generation.logo_concepts`).
Problems made today cannot be in any model's training data, so a figure measured on them is not
memory (and they measure the offline agent on problems its design never saw). The package draws
with Tk's turtle and writes PostScript, so it needs Tk, ghostscript and a display: a virtual one
(Xvfb, through PyVirtualDisplay) is started when none is set, and kept until the process exits. The
package pins pandas 1.0.5 and runs with the project's pandas, so it is installed without its
requirements (`pip install --no-deps bongard==0.0.2`).

Each problem is seeded on its own (`seed`, its index), so the same seed gives the same action
programs and, on one machine, the same pixels, whatever was generated before; a problem is written
to a temporary folder and moved into place whole, so an interrupted generation resumes where it
stopped and never leaves half a problem. The layout is the one `datasets_io.loaders.logo` reads:

```
OUT/ff/images/ff_nact<strokes>_<n>/{1,0}/0..6.png   positives in 1/, negatives in 0/
OUT/bd/images/bd_<shape>[-<shape>]_<n>/{1,0}/...     basic problems
OUT/hd/images/hd_<attribute>[-<attribute>]_<n>/...   abstract problems
OUT/<type>/<type>_action_programs.json               task -> [positive programs, negative programs]
OUT/generation.json                                  the generator, its version, seed, counts, tables
```
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from contextlib import redirect_stdout
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from datasets_io.errors import BongardError
from datasets_io.generation.logo_concepts import (
    ShapeTables,
    ShapeTablesError,
    abstract_attributes,
    abstract_concept,
    basic_concept,
    basic_shapes,
)
from datasets_io.loaders.logo import IMAGES_PER_SIDE, TYPE_NAMES

GENERATOR = "bongard"
GENERATOR_VERSION = "0.0.2"
INSTALL = f"pip install --no-deps {GENERATOR}=={GENERATOR_VERSION}"
IMAGE_SIDE_PX = 512
MAX_PAINT_TRIALS = 300
"""Placements tried per image before the last one is kept (the authors' bound)."""
STROKE_LAYOUTS: tuple[tuple[int, ...], ...] = (
    (4,), (5,), (6,), (7,), (8,), (9,), (3, 3), (2, 5), (3, 4), (3, 5), (4, 4), (4, 5),
)  # fmt: skip
"""The free-form problems' strokes per shape, as the authors' sampler offers them; problem i takes
layout i mod 12, so every size of set covers them evenly, as the 3,600 published ones do."""
MANIFEST = "generation.json"
PARTIAL = ".partial-"
"""A problem being drawn; the loader skips hidden folders, and a new generation clears them."""


class GeneratorUnavailable(BongardError):
    """What the generator needs and is missing: the package, Tk, ghostscript or Xvfb, in one line."""


@dataclass(frozen=True)
class Manifest:
    """What made a generated set, so a figure measured on it says what it was measured on."""

    generator: str
    generator_version: str
    types: list[str]
    seed: int
    count: int
    """Problems of each type."""
    tasks: list[str]
    shape_tables: dict[str, str] | None = None
    """The authors' shape tables basic and abstract problems were drawn from, by SHA-256."""
    made_at: str | None = None
    """When the set was made (UTC, ISO 8601); None in a record written before it was kept."""
    images_sha256: str | None = None
    """SHA-256 over the set's images (`images_digest`), so a record copied into another folder, or
    a set changed after it was made, is told apart from the set it records."""


PAINTER_SCALES = {"ff": (80, 140), "bd": (150, 260), "hd": (150, 320)}
"""The range of shape sizes of each type, as the authors' generation scripts set their painter (with
its magnifier effect, which draws stamps and zigzags in proportion to the shape)."""


def task_name(index: int) -> str:
    """Free-form problem `index`'s task name, as the authors name free-form problems."""
    strokes = "_".join(map(str, STROKE_LAYOUTS[index % len(STROKE_LAYOUTS)]))
    return f"ff_nact{strokes}_{index:04d}"


def programs_file(kind: str) -> str:
    return f"{kind}_action_programs.json"


def check_requirements() -> None:
    """Refuse, in one line naming what to install, a machine the generator cannot run on."""
    try:
        installed = version(GENERATOR)
    except PackageNotFoundError:
        raise GeneratorUnavailable(f"the Bongard-LOGO generator is not installed: {INSTALL}") from None
    if installed != GENERATOR_VERSION:
        raise GeneratorUnavailable(
            f"{GENERATOR} {installed} is installed; this needs {GENERATOR_VERSION}: {INSTALL}"
        )
    try:
        import tkinter  # noqa: F401
    except ImportError:
        raise GeneratorUnavailable(
            "Tk is missing: install Python's Tk (Debian: apt install python3-tk)"
        ) from None
    if shutil.which("gs") is None:
        raise GeneratorUnavailable(
            "ghostscript is missing (it turns the drawings into images): apt install ghostscript"
        )
    if not os.environ.get("DISPLAY"):
        if shutil.which("Xvfb") is None:
            raise GeneratorUnavailable("no display and no Xvfb to start one: apt install xvfb")
        if find_spec("pyvirtualdisplay") is None:
            raise GeneratorUnavailable(
                "no display, and PyVirtualDisplay is missing: pip install 'bongard-agents[logo]'"
            )


def ensure_display() -> None:
    """A display for Tk: the one set, else a virtual one started once and kept until the process
    exits (Tk's turtle screen is one per process and dies with the display it was opened on)."""
    if os.environ.get("DISPLAY"):
        return
    from pyvirtualdisplay.display import Display

    virtual = Display(visible=False, size=(1024, 1024))
    virtual.start()  # sets DISPLAY for this process
    atexit.register(virtual.stop)


def generate(
    out: Path,
    count: int,
    seed: int,
    types: Sequence[str] = ("ff",),
    tables: ShapeTables | None = None,
    on_problem: Callable[[str], None] | None = None,
) -> Manifest:
    """`count` problems of each of `types` from `seed` in `out`; problems already there are kept, not
    redrawn. Basic and abstract problems need the authors' shape `tables`. `on_problem` hears of each
    problem as it is done (or found done)."""
    check_requirements()
    needing = [kind for kind in types if kind != "ff"]
    if needing and tables is None:
        raise ShapeTablesError(
            f"{', '.join(TYPE_NAMES[kind] for kind in needing)} problems need the authors' shape tables: "
            "--shapes CHECKOUT (a Bongard-LOGO checkout)"
        )
    ensure_display()
    tasks: list[str] = []
    with redirect_stdout(io.StringIO()):  # the package prints as it works; the output is the command's
        kinds = [(kind, _sampler(kind, tables), _painter(kind)) for kind in types]
        for kind, sample, painter in kinds:
            tasks += _generate_type(out, kind, sample, painter, count, seed, on_problem)
    digests = tables.digests() if needing and tables is not None else None
    made_at = datetime.now(UTC).isoformat(timespec="seconds")
    manifest = Manifest(
        GENERATOR, GENERATOR_VERSION, list(types), seed, count, tasks, digests, made_at, images_digest(out)
    )
    _write_json(out / MANIFEST, asdict(manifest))
    return manifest


def _generate_type(
    out: Path,
    kind: str,
    sample: Sampler,
    painter: Any,
    count: int,
    seed: int,
    on_problem: Callable[[str], None] | None,
) -> list[str]:
    images = out / kind / "images"
    images.mkdir(parents=True, exist_ok=True)
    for stale in images.glob(f"{PARTIAL}*"):  # a killed generation's problem in progress
        shutil.rmtree(stale, ignore_errors=True)
    programs: dict[str, Any] = {}
    for index in range(count):
        problem = sample(seed, index)
        task = problem.get_problem_name()
        programs[task] = problem.get_action_string_list()
        if not (images / task).is_dir():
            _write_problem(painter, problem, images / task, seed, index)
        if on_problem is not None:
            on_problem(task)
    _write_json(out / kind / programs_file(kind), programs)
    return list(programs)


Sampler = Callable[[int, int], Any]
"""(seed, index) -> the authors' BongardProblem for that problem: its programs, not yet drawn."""


def _sampler(kind: str, tables: ShapeTables | None) -> Sampler:
    if kind == "ff":
        return _freeform()
    assert tables is not None
    try:
        return _basic(tables) if kind == "bd" else _abstract(tables)
    except KeyError as missing:
        folder = tables.shapes.parent
        raise ShapeTablesError(f"the shape tables in {folder} lack the column {missing}") from None
    except (ValueError, TypeError, AttributeError, IndexError) as error:
        raise ShapeTablesError(f"unreadable shape tables in {tables.shapes.parent}: {error}") from None


def _freeform() -> Sampler:
    from bongard.sampler.freeform_sampler import FreeformSampler

    sampler = FreeformSampler(IMAGES_PER_SIDE, IMAGES_PER_SIDE)

    def sample(seed: int, index: int) -> Any:
        sampler.random_state = _state(seed, index, 0)
        return sampler.sample(list(STROKE_LAYOUTS[index % len(STROKE_LAYOUTS)]), index)

    return sample


def _basic(tables: ShapeTables) -> Sampler:
    from bongard.sampler.basic_sampler import BasicSampler

    sampler = BasicSampler(str(tables.shapes), str(tables.attributes), IMAGES_PER_SIDE, IMAGES_PER_SIDE)
    shapes = basic_shapes(sampler.shape_sup_class_dict)
    if not shapes:
        raise ShapeTablesError(f"{tables.shapes}: no super class has two shapes, so no basic problem fits")

    def sample(seed: int, index: int) -> Any:
        concept = basic_concept(index, shapes, _state(seed, index, 2))
        sampler.random_state = _state(seed, index, 0)
        return sampler.sample(concept, index)

    return sample


def _abstract(tables: ShapeTables) -> Sampler:
    from bongard.sampler.abstract_sampler import AbstractSampler

    sampler = AbstractSampler(str(tables.shapes), str(tables.attributes), IMAGES_PER_SIDE, IMAGES_PER_SIDE)
    singles, pairs = abstract_attributes(sampler.shape_attributes_dict)
    if not singles:
        raise ShapeTablesError(
            f"{tables.attributes}: no attribute has {IMAGES_PER_SIDE} shapes with it and "
            f"{IMAGES_PER_SIDE} without, so no abstract problem fits"
        )

    def sample(seed: int, index: int) -> Any:
        concept = abstract_concept(index, singles, pairs, _state(seed, index, 2))
        sampler.random_state = _state(seed, index, 0)
        return sampler.sample(concept, index)

    return sample


def _painter(kind: str) -> Any:
    from bongard.bongard_painter import BongardProblemPainter

    return BongardProblemPainter(scaling_factors_range=PAINTER_SCALES[kind], magnifier_effect=True)


def _state(seed: int, index: int, stream: int) -> Any:
    """A random state of its own per problem and use (0: its programs, 1: their placement, 2: which
    shapes or attributes a basic or abstract problem states)."""
    import numpy as np

    return np.random.RandomState([seed, index, stream])


def _write_problem(painter: Any, problem: Any, folder: Path, seed: int, index: int) -> None:
    """The problem's 14 images, drawn into a temporary folder moved into place whole."""
    painter.random_state = _state(seed, index, 1)
    partial = Path(tempfile.mkdtemp(dir=folder.parent, prefix=PARTIAL))
    try:
        sides = (("1", problem.get_positive_bongard_images()), ("0", problem.get_negative_bongard_images()))
        for label, side in sides:
            (partial / label).mkdir()
            for number, image in enumerate(side):
                _paint(painter, image)
                _save(painter, partial / label / f"{number}.png")
        partial.rename(folder)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _paint(painter: Any, image: Any) -> None:
    """Place the image's shapes at random until they fit the canvas (the authors' procedure, through
    their painter's own methods)."""
    low, high = painter.scaling_factors_range
    for _ in range(MAX_PAINT_TRIALS):
        painter.wn.clear()
        shapes = image.get_num_shapes()
        starts, orientations = painter.sample_start_coordinates_and_orientation(num_shapes=shapes)
        image.set_start_coordinates(start_coordinates=starts)
        image.set_start_orientations(start_orientations=orientations)
        scales = [painter.random_state.uniform(low=low, high=high) for _ in range(shapes)]
        image.set_consistent_scaling_factors(scaling_factors=scales)
        fits = painter.bongard_image_painter.draw_bongard_image(bongard_image=image)
        painter.screen.update()
        if fits:
            return


def _save(painter: Any, path: Path) -> None:
    """The canvas as a PNG: through PostScript, which Pillow reads with ghostscript (`load()` before
    `resize`, which the package's own saving lacks: "image has wrong mode")."""
    from PIL import Image

    postscript = path.with_suffix(".ps")
    painter.screen.getcanvas().postscript(file=str(postscript))
    with Image.open(postscript) as drawn:
        drawn.load()
        drawn.resize((IMAGE_SIDE_PX, IMAGE_SIDE_PX)).save(path)
    postscript.unlink()
    painter.wn.clear()


def _write_json(path: Path, value: Any) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(value, indent=1), encoding="utf-8")
    partial.replace(path)


def images_digest(out: Path) -> str:
    """SHA-256 over every image of a set, in path order, each with its path: what a generation
    record holds of the images it made."""
    digest = hashlib.sha256()
    for path in sorted(out.rglob("*.png")):
        digest.update(path.relative_to(out).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def read_manifest(out: Path) -> Manifest | None:
    path = out / MANIFEST
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if "kind" in data:  # a free-form set generated before basic and abstract problems were
        data["types"] = [data.pop("kind")]
    return Manifest(**data)
