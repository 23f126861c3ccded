"""Published archives unpacked into a dataset's staging folder, in the layout its loader reads.

Errors come out as `ValueError` naming the archive and what is wrong with it, so a download can
drop the archive and say to fetch it again.
"""

from __future__ import annotations

import io
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from PIL import Image

WONDERLAND_PANELS = Path("data") / "bongard-problems-high-res"
WONDERLAND_SHEETS = Path("data") / "bpimgs"
"""Where the whole-problem sheets are kept, as in the authors' repository (`data/bpimgs/pNNNN.png`):
the image their Tasks 1, 1.1 and 3 send (`-O sheet=shipped`)."""
"""Where the Wonderland repository keeps the cropped panels, one `pNNNN/` folder per problem."""
WONDERLAND_PROBLEMS = range(1, 101)
SHEET_NAME = re.compile(r"(?:^|/)p([0-9]{4})\.png$")
PANEL_PX = 430
GAP_PX = 50
COLUMNS = 2
ROWS = 3
SIDE_ORIGINS = ((9, 9), (1312, 9))
"""Top-left corner of the left and the right side's first panel on a sheet (the geometry of the
Wonderland repository's `utils/crop_images.py`)."""
HOI_SPLIT_FILES = "bongard_hoi_*.json"
OPENWORLD_IMAGE = re.compile(r"(?:^|/)images/([0-9]{4})/([^/\\]+)$")
"""A Bongard-OpenWorld image inside the authors' backup: `images/<uid>/<file>` at any depth, kept as
`images/<uid>/<file>`, the path its records name."""


def panel_boxes() -> list[tuple[int, int, int, int]]:
    """The 12 panels' boxes on a sheet, in panel order: per side, column by column, top to bottom."""
    boxes = []
    for x0, y0 in SIDE_ORIGINS:
        for column in range(COLUMNS):
            for row in range(ROWS):
                left, top = x0 + (PANEL_PX + GAP_PX) * column, y0 + (PANEL_PX + GAP_PX) * row
                boxes.append((left, top, left + PANEL_PX, top + PANEL_PX))
    return boxes


def unpack_wonderland_sheets(archive: Path, dataset: Path) -> None:
    """Depeweg et al.'s problem sheets (`pNNNN.png`) kept whole and cut into the 12 panels of each problem."""
    try:
        with zipfile.ZipFile(archive) as sheets:
            members = {int(m[1]): name for name in sheets.namelist() if (m := SHEET_NAME.search(name))}
            missing = [number for number in WONDERLAND_PROBLEMS if number not in members]
            if missing:
                raise ValueError(
                    f"{archive.name} has no sheet p{missing[0]:04d}.png ({len(missing)} missing)"
                )
            (dataset / WONDERLAND_SHEETS).mkdir(parents=True, exist_ok=True)
            for number in WONDERLAND_PROBLEMS:
                data = sheets.read(members[number])
                (dataset / WONDERLAND_SHEETS / f"p{number:04d}.png").write_bytes(data)
                _cut_sheet(data, dataset / WONDERLAND_PANELS / f"p{number:04d}")
    except zipfile.BadZipFile as error:
        raise ValueError(f"{archive.name} is not a zip archive: {error}") from None


def _cut_sheet(data: bytes, into: Path) -> None:
    boxes = panel_boxes()
    with Image.open(io.BytesIO(data)) as sheet:
        right, bottom = max(box[2] for box in boxes), max(box[3] for box in boxes)
        if sheet.width < right or sheet.height < bottom:
            raise ValueError(
                f"sheet {into.name} is {sheet.width}x{sheet.height} px, smaller than {right}x{bottom}"
            )
        into.mkdir(parents=True, exist_ok=True)
        for index, box in enumerate(boxes):
            sheet.crop(box).save(into / f"{index}.png")


def unpack_hoi_annotations(archive: Path, dataset: Path) -> None:
    """The annotation tar as published (`bongard_hoi_release/bongard_hoi_<split>.json`), every member
    kept inside the dataset folder (tarfile's `data` filter)."""
    try:
        with tarfile.open(archive) as annotations:
            annotations.extractall(dataset, filter="data")
    except tarfile.TarError as error:
        raise ValueError(f"{archive.name} is not a readable tar archive: {error}") from None
    if not any(dataset.rglob(HOI_SPLIT_FILES)):
        raise ValueError(f"{archive.name} holds no {HOI_SPLIT_FILES} split file")


def unpack_openworld_images(archive: Path, dataset: Path) -> None:
    """The authors' image backup (a zip or a tar) kept as `images/<uid>/<file>`, the layout the
    records' `imageFiles` name; every other member is left out, so none can land elsewhere."""
    count = 0
    for name, data in _archive_files(archive):
        if (found := OPENWORLD_IMAGE.search(name)) and found[2] not in (".", ".."):
            place = dataset / "images" / found[1] / found[2]
            place.parent.mkdir(parents=True, exist_ok=True)
            place.write_bytes(data())
            count += 1
    if count == 0:
        raise ValueError(f"{archive.name} holds no image under images/<uid>/")


def _archive_files(archive: Path) -> Iterator[tuple[str, Callable[[], bytes]]]:
    """(member name, its bytes on demand) of each regular file of a zip or a tar archive."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as opened:
            for info in opened.infolist():
                if not info.is_dir():
                    yield info.filename, partial(opened.read, info)
        return
    try:
        with tarfile.open(archive) as opened:
            for member in opened:
                if member.isfile() and (handle := opened.extractfile(member)) is not None:
                    yield member.name, handle.read
    except tarfile.TarError as error:
        raise ValueError(f"{archive.name} is neither a zip nor a readable tar archive: {error}") from None
