"""Published archives unpacked into a dataset's staging folder, in the layout its loader reads.

Each reads its archive through `datasets_io.downloads.unpacking` (surveyed whole, members checked and capped,
copied in chunks) and writes only inside the dataset folder. Errors come out as `ValueError` naming
the archive and what is wrong with it, so a download can drop the archive and say to fetch it again.
"""

from __future__ import annotations

import re
from pathlib import Path

from PIL import Image

from datasets_io.downloads.safe_paths import inside
from datasets_io.downloads.unpacking import ArchiveReader, MiB

WONDERLAND_PANELS = Path("data") / "bongard-problems-high-res"
"""Where the Wonderland repository keeps the cropped panels, one `pNNNN/` folder per problem."""
WONDERLAND_SHEETS = Path("data") / "bpimgs"
"""Where the whole-problem sheets are kept, as in the authors' repository (`data/bpimgs/pNNNN.png`):
the image their Tasks 1, 1.1 and 3 send (`-O sheet=shipped`)."""
WONDERLAND_PROBLEMS = range(1, 101)
SHEET_NAME = re.compile(r"(?:^|/)p([0-9]{4})\.png$")
PANEL_PX = 430
GAP_PX = 50
COLUMNS = 2
ROWS = 3
SIDE_ORIGINS = ((9, 9), (1312, 9))
"""Top-left corner of the left and the right side's first panel on a sheet (the geometry of the
Wonderland repository's `utils/crop_images.py`)."""
SHEET_LARGEST_BYTES = 16 * MiB
"""A sheet is 2231x1408 px: 9.4 MB as raw RGB, the most its PNG can hold (the largest genuine member,
bounded from above)."""
SHEET_PIXELS_CAP = 4 * 2231 * 1408
"""Pixels a sheet may have, four times a genuine one's; Pillow's own bomb limit (89 million) is far above."""
HOI_SPLIT_FILES = "bongard_hoi_*.json"
HOI_LARGEST_BYTES = 208 * MiB
"""Zenodo lists the record's files at 54.6 to 207.7 MB (the 50.4 GB image tar aside): no member of the
annotation tar can be larger than the largest of them."""
OPENWORLD_LARGEST_BYTES = 32 * MiB
"""The images are photographs crawled from the web for a 512-pixel benchmark; 32 MiB is above any
such JPEG or PNG (not measured on the backup itself, which this machine cannot reach)."""
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
    with ArchiveReader(archive, SHEET_LARGEST_BYTES, dataset) as sheets:
        members = {int(m[1]): member for member in sheets.members if (m := SHEET_NAME.search(member.name))}
        missing = [number for number in WONDERLAND_PROBLEMS if number not in members]
        if missing:
            raise ValueError(f"{archive.name} has no sheet p{missing[0]:04d}.png ({len(missing)} missing)")
        for number in WONDERLAND_PROBLEMS:
            sheet = dataset / WONDERLAND_SHEETS / f"p{number:04d}.png"
            sheets.write(members[number], sheet)
            _cut_sheet(sheet, dataset / WONDERLAND_PANELS / f"p{number:04d}")


def _cut_sheet(sheet_file: Path, into: Path) -> None:
    boxes = panel_boxes()
    right, bottom = max(box[2] for box in boxes), max(box[3] for box in boxes)
    try:
        with Image.open(sheet_file) as sheet:
            if sheet.width * sheet.height > SHEET_PIXELS_CAP:
                raise ValueError(
                    f"sheet {sheet_file.name} is {sheet.width}x{sheet.height} px, over the cap of "
                    f"{SHEET_PIXELS_CAP:,} pixels (a decompression bomb?): refused before decoding"
                )
            if sheet.width < right or sheet.height < bottom:
                raise ValueError(
                    f"sheet {sheet_file.name} is {sheet.width}x{sheet.height} px, "
                    f"smaller than {right}x{bottom}"
                )
            into.mkdir(parents=True, exist_ok=True)
            for index, box in enumerate(boxes):
                sheet.crop(box).save(into / f"{index}.png")
    except Image.DecompressionBombError as error:
        raise ValueError(f"sheet {sheet_file.name}: {error}: refused before decoding") from None


def unpack_hoi_annotations(archive: Path, dataset: Path) -> None:
    """The annotation tar as published (`bongard_hoi_release/bongard_hoi_<split>.json`), every member
    kept at its own path inside the dataset folder."""
    with ArchiveReader(archive, HOI_LARGEST_BYTES, dataset) as annotations:
        for member in annotations.members:
            annotations.write(member, inside(dataset, member.path, f"{archive.name} member"))
    if not any(dataset.rglob(HOI_SPLIT_FILES)):
        raise ValueError(f"{archive.name} holds no {HOI_SPLIT_FILES} split file")


def unpack_openworld_images(archive: Path, dataset: Path) -> None:
    """The authors' image backup (a zip or a tar) kept as `images/<uid>/<file>`, the layout the
    records' `imageFiles` name; every other member is left out."""
    count = 0
    with ArchiveReader(archive, OPENWORLD_LARGEST_BYTES, dataset) as backup:
        for member in backup.members:
            if found := OPENWORLD_IMAGE.search(member.path.as_posix()):
                backup.write(
                    member, inside(dataset, f"images/{found[1]}/{found[2]}", f"{archive.name} member")
                )
                count += 1
    if count == 0:
        raise ValueError(f"{archive.name} holds no image under images/<uid>/")
