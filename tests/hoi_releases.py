"""Bongard-HOI releases built here in the published layout (`[positives, negatives, "<action>++<object>"]`,
image records with `im_path` and `crop_bbox`), never its data: every image is drawn here and every
annotation is made up, so each expected crop, count and concept is known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image

TEST_FILE = "bongard_hoi_test_seen_obj_seen_act.json"
IMAGE_SIZE = (80, 60)
Box = list[int]


def make_photo(path: Path, tint: int, size: tuple[int, int] = IMAGE_SIZE) -> Path:
    """A lossless image whose pixel (x, y) is (x, y, tint), so any crop can be told by its corner."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", size)
    image.putdata([(x, y, tint) for y in range(size[1]) for x in range(size[0])])
    image.save(path)
    return path


def image_entry(im_path: str, box: Box, action: str, thing: str) -> dict[str, Any]:
    """One image record with every field upstream's records have (values made up)."""
    x1, y1, x2, y2 = box
    return {
        "im_path": im_path,
        "crop_bbox": box,
        "sub_bbox": [1, 1, (x2 - x1) // 2, y2 - y1 - 1],
        "obj_bbox": [(x2 - x1) // 2, 1, x2 - x1 - 1, (y2 - y1) // 2],
        "sub_class": "person",
        "obj_class": thing,
        "act_class": action,
        "obj_id": 7,
        "sub_id": 1,
        "act_id": 3,
    }


def default_box(number: int) -> Box:
    """A distinct box inside the image for the n-th image of a record."""
    return [number, number // 2, 40 + number, 30 + number // 2]


def make_record(
    image_root: Path,
    name: str,
    task: str = "ride++bicycle",
    source: str = "hico_20160224_det/images/test2015",
    boxes: list[Box] | None = None,
) -> list[Any]:
    """A record of 7 positives and 7 negatives whose images exist under `image_root`."""
    action, _, thing = task.partition("++")
    boxes = boxes or [default_box(n) for n in range(14)]
    entries = []
    for number in range(14):
        relative = f"{source}/{name}_{number:02d}.png"
        make_photo(image_root / relative, tint=number)
        entries.append(image_entry(f"./{relative}", boxes[number], action if number < 7 else "hold", thing))
    return [entries[:7], entries[7:], task]


def write_split(folder: Path, records: object, file: str = TEST_FILE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file
    path.write_text(json.dumps(records), encoding="utf-8")
    return path
