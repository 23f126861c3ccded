"""Bongard-LOGO in its released layout (ShapeBongard_V2).

```
<dataset>/
  ff/images/<task>/1/0..6.png     free-form shape problems: positives in 1/, negatives in 0/
  bd/images/<task>/{1,0}/0..6.png basic shape problems
  hd/images/<task>/{1,0}/0..6.png abstract (human-designed attribute) shape problems
  <type>/<type>_action_programs.json  optional: task -> [positive programs, negative programs], one
                                  per image (kept per panel in the problem's metadata)
  ShapeBongard_V2_split.json      optional: split name (train, val, test_ff, test_bd,
                                  test_hd_comb, test_hd_novel) -> task names
```
Positives are the left side, negatives the right side. Upstream draws its query at
random from the 7 images of a side; here image 6 (option `test_image`) is each side's
test panel and the other six its context panels.

The task name is the concept's only statement (upstream's samplers write it):
`ff_nact<strokes>[_<strokes>]_<n>` one or two free-form shapes with that many strokes,
identical in every positive (the action program, when present, says which strokes);
`bd_<shape>[-<shape>]_<n>` one or two named shapes, one of which a negative swaps for
another of its kind; `hd_<attribute>[-<attribute>]_<n>` shapes having one or two
attributes that negatives lack. The texts below are written from those parts.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import cast

from pydantic import BaseModel, Field, JsonValue, ValidationError, field_validator

from datasets_io.errors import describe_validation_error
from datasets_io.images import find_image, list_images
from datasets_io.loaders.base import DatasetLoader, LoaderOptions, read_json
from datasets_io.problem import BongardProblem, Concept, Panel, Side

PROBLEM_TYPES = ("ff", "bd", "hd")
TYPE_NAMES = {"ff": "free-form", "bd": "basic", "hd": "abstract"}
IMAGES_PER_SIDE = 7
SIDE_FOLDERS: dict[Side, str] = {"left": "1", "right": "0"}
SPLIT_FILE = "ShapeBongard_V2_split.json"
SHAPES_TABLE = Path("data") / "human_designed_shapes.tsv"
ACTION_PROGRAMS = "action_programs"
"""The metadata key of each panel's action program (its shapes, each a list of action strings) by ref,
where the dataset has the programs: what the symbolic-input strategies read instead of the image."""
SHAPE_FUNCTION, SHAPE_NAME = "shape function name", "shape name"
"""The columns of the authors' shape table that name a shape's function and its display name."""
TASK_NAME = re.compile(r"^(ff|bd|hd)_(.+)_(\d+)$")
STROKE_COUNTS = re.compile(r"^nact(\d+(?:_\d+)*)$")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

STROKE_STYLES = {
    "normal": "plain",
    "zigzag": "zigzag",
    "circle": "circle-studded",
    "square": "square-studded",
    "triangle": "triangle-studded",
}
"""How upstream's line types look when drawn: a plain stroke, a zigzag, or one with stamps."""

ATTRIBUTE_PHRASES = {
    "convex": "are convex",
    "symmetric": "are symmetric",
    "self_transposed": "are self-transposed",
    "symmetric_transposed": "are symmetric and self-transposed",
    "thin_shape": "are thin",
    "closed_shape": "are closed",
    "necked": "have a neck",
    "balanced_two": "have two balanced parts",
    "unbalanced_two": "have two unbalanced parts",
    "exist_regular": "contain a regular shape",
    "has_line_crossing": "have crossing lines",
}
"""Attributes whose name does not read well by the general rule in `attribute_phrase`."""


class LogoOptions(LoaderOptions):
    split: str | None = None
    """Only the tasks of this split of the split file (e.g. `test_ff`); default every task found."""
    split_file: Path | None = None
    """The split file; default `ShapeBongard_V2_split.json` in the dataset folder."""
    types: str = ",".join(PROBLEM_TYPES)
    """Problem types read, comma-separated: ff (free-form), bd (basic), hd (abstract)."""
    test_image: int = Field(default=IMAGES_PER_SIDE - 1, ge=0, lt=IMAGES_PER_SIDE)
    """Which image of each side is its test panel."""
    shapes: Path | None = None
    """The authors' shape table (`data/human_designed_shapes.tsv` of a Bongard-LOGO checkout, or the
    checkout itself): basic-shape concepts then use its display names ("circle" for the function
    `closed_circle`), not the function names read aloud. Read from the user's checkout, never shipped."""

    @field_validator("types")
    @classmethod
    def _known_types(cls, value: str) -> str:
        chosen = [part.strip() for part in value.split(",") if part.strip()]
        unknown = sorted(set(chosen) - set(PROBLEM_TYPES))
        if not chosen or unknown:
            raise ValueError(f"expected some of {', '.join(PROBLEM_TYPES)}, got {value!r}")
        return ",".join(chosen)

    @property
    def type_list(self) -> list[str]:
        return self.types.split(",")


Shapes = list[list[str]]
"""The shapes of one image, each as its action strings."""


class TaskPrograms(BaseModel):
    positives: list[Shapes] = Field(min_length=1)
    negatives: list[Shapes]


def stroke_phrase(action: str, sized: bool = False) -> str:
    """One action string (`line_zigzag_0.500-0.750`, `arc_normal_0.500_0.625-0.500`) in words; `sized`:
    with its length (a line's) or radius (an arc's), as the program gives it (1.0: the longest)."""
    movement, separator, turn_text = action.rpartition("-")
    parts = movement.split("_")
    if not separator or parts[0] not in ("line", "arc") or len(parts) != (3 if parts[0] == "line" else 4):
        raise ValueError(f"unreadable action {action!r}")
    turn = float(turn_text)
    style = STROKE_STYLES.get(parts[1], parts[1])
    if parts[0] == "line":
        body = f"{style} line" + (f" of length {float(parts[2]):.2f}" if sized else "")
    else:
        body = f"{style} arc of {round(abs(float(parts[3]) * 720 - 360))}°"
        body += f" and radius {float(parts[2]):.2f}" if sized else ""
    degrees = round(turn * 360 - 180) if turn >= 0.5 else round(180 - turn * 360)
    if degrees == 0:
        return body
    return f"turn {'left' if turn >= 0.5 else 'right'} {degrees}°, {body}"


def program_words(shapes: Shapes) -> str:
    """An image's action program in words, shape by shape and stroke by stroke, sizes and turns kept."""
    return "; ".join(
        f"shape {number}: " + ", then ".join(stroke_phrase(action, sized=True) for action in shape)
        for number, shape in enumerate(shapes, 1)
    )


def freeform_text(counts: list[int], shapes: Shapes | None) -> str:
    """The free-form concept: the same shape(s) in every positive, with their strokes if known."""
    described = shapes if shapes is not None and len(shapes) == len(counts) else None
    if len(counts) == 1:
        text = f"the same free-form shape drawn in {counts[0]} strokes"
        return f"{text}: {'; '.join(map(stroke_phrase, described[0]))}" if described else text
    how_many = NUMBER_WORDS[len(counts)] if len(counts) < len(NUMBER_WORDS) else str(len(counts))
    if described:
        parts = [f"one in {len(s)} strokes ({'; '.join(map(stroke_phrase, s))})" for s in described]
        return f"the same {how_many} free-form shapes, {', '.join(parts)}"
    numbers = f"{', '.join(str(n) for n in counts[:-1])} and {counts[-1]}"
    return f"the same {how_many} free-form shapes, drawn in {numbers} strokes"


def shape_name(name: str) -> str:
    """A shape's function name read aloud: `isosceles_trapezoid` -> "isosceles trapezoid"."""
    return " ".join(name.replace("_", " ").split()).replace("traingle", "triangle")


def attribute_phrase(attribute: str) -> str:
    """What shapes with the attribute do, as a predicate: `has_acute_angle` -> "have an acute angle"."""
    if attribute in ATTRIBUTE_PHRASES:
        return ATTRIBUTE_PHRASES[attribute]
    words = attribute.split("_")
    if words[0] in ("has", "exist") and len(words) > 1:
        rest = words[1:]
        article = "" if rest[0] in NUMBER_WORDS else ("an " if rest[0][0] in "aeiou" else "a ")
        verb = "have" if words[0] == "has" else "contain"
        return f"{verb} {article}{' '.join(rest)}"
    return f"are {' '.join(words)}"


def concept_from_task(
    task: str, shapes: Shapes | None = None, names: Mapping[str, str] | None = None
) -> tuple[str | None, dict[str, JsonValue]]:
    """The concept text a task name states, and the parts read from it (None when unreadable);
    `names`: a shape's display name by its function name, from the authors' shape table."""
    match = TASK_NAME.match(task)
    if match is None:
        return None, {}
    kind, middle, _ = match.groups()
    if kind == "ff":
        counts = STROKE_COUNTS.match(middle)
        if counts is None:
            return None, {}
        strokes = [int(n) for n in counts.group(1).split("_")]
        return freeform_text(strokes, shapes), {"strokes": list[JsonValue](strokes)}
    parts = middle.split("-")
    if kind == "bd":
        shown = " and ".join((names or {}).get(part) or shape_name(part) for part in parts)
        return shown, {"shapes": list[JsonValue](parts)}
    phrases = " and ".join(attribute_phrase(a) for a in parts)
    return f"shapes that {phrases}", {"attributes": list[JsonValue](parts)}


class LogoLoader(DatasetLoader):
    options_model = LogoOptions
    options: LogoOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        return any((root / kind / "images").is_dir() for kind in PROBLEM_TYPES)

    @property
    def concept_source(self) -> str:
        return "task names (ff: stroke counts and action programs; bd: shapes; hd: attributes)"

    @property
    def split_path(self) -> Path:
        return self.options.split_file or self.root / SPLIT_FILE

    @cached_property
    def _ids(self) -> list[str]:
        if not self.root.is_dir():
            raise self.error("dataset folder is missing", path=self.root)
        if self.options.split is not None:
            return self._split_ids(self.options.split)
        ids: list[str] = []
        folders = [self.root / kind / "images" for kind in self.options.type_list]
        for folder in (f for f in folders if f.is_dir()):
            ids.extend(sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")))
        if not any(f.is_dir() for f in folders):
            layout = "/".join(self.options.type_list)
            raise self.error(f"no problem folders ({layout}/images/<task>/) found", path=self.root)
        return ids

    def _split_ids(self, split: str) -> list[str]:
        data = read_json(self.split_path, self.name)
        if not isinstance(data, dict):
            raise self.error("expected a JSON object of split name -> task names", path=self.split_path)
        if split not in data:
            raise self.error(f"no split {split!r} (splits: {', '.join(sorted(data))})", path=self.split_path)
        tasks = data[split]
        if not (isinstance(tasks, list) and all(isinstance(t, str) and t for t in tasks)):
            raise self.error(f"split {split!r} is not a list of task names", path=self.split_path)
        chosen = set(self.options.type_list)
        # A task of an unknown type stays in, to be reported when it is loaded.
        return sorted(
            {t for t in tasks if t.split("_", 1)[0] in chosen or t.split("_", 1)[0] not in PROBLEM_TYPES}
        )

    def problem_ids(self) -> list[str]:
        return self._ids

    def load_problem(self, problem_id: str) -> BongardProblem:
        kind = problem_id.split("_", 1)[0]
        if kind not in PROBLEM_TYPES:
            raise self.error(
                f"task name does not start with {', '.join(t + '_' for t in PROBLEM_TYPES)}", problem_id
            )
        folder = self.root / kind / "images" / problem_id
        if not folder.is_dir():
            raise self.error("problem folder is missing", problem_id, folder)
        test = self.options.test_image
        panels: dict[Side, list[Panel]] = {"left": [], "right": []}
        for side, label in SIDE_FOLDERS.items():
            side_folder = folder / label
            role_name = "positive" if side == "left" else "negative"
            if not side_folder.is_dir():
                raise self.error(
                    f"missing the {label}/ folder of {role_name} images", problem_id, side_folder
                )
            count = len(list_images(side_folder))
            if count != IMAGES_PER_SIDE:
                raise self.error(
                    f"{count} {role_name} images in {label}/, expected {IMAGES_PER_SIDE} "
                    f"(0-{IMAGES_PER_SIDE - 1})",
                    problem_id,
                    side_folder,
                )
            for index in range(IMAGES_PER_SIDE):
                panels[side].append(
                    Panel(
                        path=find_image(side_folder, str(index)),
                        side=side,
                        index=index,
                        role="test" if index == test else "context",
                    )
                )
        programs = self._task_programs(kind, problem_id)
        shapes = programs.positives[0] if programs is not None and kind == "ff" else None
        text, parts = concept_from_task(problem_id, shapes, self._shape_names)
        return self.build(
            problem_id,
            left=[p for p in panels["left"] if p.role == "context"],
            right=[p for p in panels["right"] if p.role == "context"],
            test_left=[p for p in panels["left"] if p.role == "test"],
            test_right=[p for p in panels["right"] if p.role == "test"],
            concept=Concept(left=text) if text else None,
            metadata={
                "problem_type": kind,
                "problem_type_name": TYPE_NAMES[kind],
                **parts,
                **self._panel_programs(programs, panels["left"] + panels["right"]),
            },
        )

    @cached_property
    def _shape_names(self) -> dict[str, str]:
        """Display names by shape function name, from the authors' table when the option names it."""
        if self.options.shapes is None:
            return {}
        path = self.options.shapes
        if path.is_dir():
            path = path / SHAPES_TABLE if (path / SHAPES_TABLE).is_file() else path / SHAPES_TABLE.name
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                rows = list(csv.DictReader(handle, delimiter="\t"))
        except FileNotFoundError:
            raise self.error("the shape table is missing (option shapes)", path=path) from None
        except (csv.Error, UnicodeDecodeError) as error:
            raise self.error(f"malformed shape table: {error}", path=path) from None
        if rows and not {SHAPE_FUNCTION, SHAPE_NAME} <= set(rows[0]):
            raise self.error(
                f"the shape table needs the columns {SHAPE_FUNCTION!r} and {SHAPE_NAME!r}", path=path
            )
        return {row[SHAPE_FUNCTION].strip(): row[SHAPE_NAME].strip() for row in rows if row[SHAPE_NAME]}

    def programs_path(self, kind: str) -> Path:
        return self.root / kind / f"{kind}_action_programs.json"

    @cached_property
    def _program_tables(self) -> dict[str, dict[str, object]]:
        """Each type's action programs by task, read when a problem of that type first needs them
        (a malformed file of one type leaves the others' problems usable)."""
        return {}

    def _programs(self, kind: str) -> dict[str, object]:
        if kind not in self._program_tables:
            self._program_tables[kind] = self._read_programs(kind)
        return self._program_tables[kind]

    def _read_programs(self, kind: str) -> dict[str, object]:
        path = self.programs_path(kind)
        if not path.is_file():
            return {}
        data = read_json(path, self.name)
        if not isinstance(data, dict):
            raise self.error("expected a JSON object of task name -> action programs", path=path)
        return data

    def _task_programs(self, kind: str, problem_id: str) -> TaskPrograms | None:
        """The task's programs, one per image in image order (positives, then negatives), if any."""
        if problem_id not in self._programs(kind):
            return None
        path = self.programs_path(kind)
        entry = self._programs(kind)[problem_id]
        try:
            if not (isinstance(entry, list) and len(entry) == 2):
                raise ValueError("expected [positive programs, negative programs]")
            programs = TaskPrograms.model_validate({"positives": entry[0], "negatives": entry[1]})
            for image in programs.positives + programs.negatives:
                for shape in image:
                    for action in shape:
                        stroke_phrase(action)
        except ValidationError as error:
            reason = describe_validation_error(error)
            raise self.error(f"malformed action program: {reason}", problem_id, path) from None
        except ValueError as error:
            raise self.error(f"malformed action program: {error}", problem_id, path) from None
        return programs

    def _panel_programs(self, programs: TaskPrograms | None, panels: list[Panel]) -> dict[str, JsonValue]:
        """Each panel's action program by ref, when there is one per image."""
        if programs is None or not (len(programs.positives) == len(programs.negatives) == IMAGES_PER_SIDE):
            return {}
        by_side = {"left": programs.positives, "right": programs.negatives}
        found: dict[str, JsonValue] = {
            panel.ref: cast(JsonValue, by_side[panel.side][panel.index]) for panel in panels
        }
        return {ACTION_PROGRAMS: found}
