"""Bongard-OpenWorld records and releases built here, as its authors publish them, so every value is known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.builders import distinct_color, make_image

CAPTION = "A dog is catching a frisbee in the air."


def make_record(
    image_root: Path, uid: str, *, common_sense: str = "0", caption: str = CAPTION
) -> dict[str, Any]:
    """A record whose 14 images exist under `image_root` as `images/<uid>/<n>.jpg`."""
    files = [f"images/{uid}/{number}.jpg" for number in range(14)]
    for number, name in enumerate(files):
        make_image(image_root / name, distinct_color(number))
    return {
        "uid": uid,
        "commonSense": common_sense,
        "concept": "dog, frisbee",
        "caption": caption,
        "imageFiles": files,
    }


def write_records(folder: Path, split: str, records: list[object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"bongard_ow_{split}.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


UPSTREAM_SPLITS = {"train": ["0002", "0000"], "val": ["0001"], "test": ["0008", "0013"]}


UPSTREAM_CATEGORIES = {"0000": "0", "0001": "1", "0002": "9", "0008": "0", "0013": "5"}


def upstream_image(uid: str, polarity: str, number: int) -> str:
    """An image name in the upstream style: polarity, number, crawl time, the URL made a name."""
    url = f"https:__example.org__{uid}__{polarity}{number}.jpg?s=612x612&w=0&k=20&c=x1%2Cy="
    return f"images/{uid}/{polarity}__{number}__2023-03-18-07-48-{10 + number:02d}__{url}.jpg"


def upstream_record(image_root: Path, uid: str, *, urls: bool = False) -> dict[str, Any]:
    """A record in the upstream shape, its 14 images made under `image_root`."""
    files = [upstream_image(uid, polarity, n) for polarity in ("pos", "neg") for n in range(7)]
    for number, name in enumerate(files):
        make_image(image_root / name, distinct_color(number + int(uid)))
    record: dict[str, Any] = {
        "uid": uid,
        "commonSense": UPSTREAM_CATEGORIES[uid],
        "concept": f"concept {uid}",
        "caption": f"A caption of problem {uid}.",
        "imageFiles": files,
    }
    if urls:
        record["urls"] = [f"https://example.org/{uid}/{n}.jpg" for n in range(14)]
    return record


def github_release(root: Path, splits: dict[str, list[str]] = UPSTREAM_SPLITS) -> list[Path]:
    """The README's folder: split files, the combined file (every record, with urls), bbox_data.pkl."""
    written = [
        write_records(root, split, [upstream_record(root, uid) for uid in uids])
        for split, uids in splits.items()
    ]
    every = sorted(uid for uids in splits.values() for uid in uids)
    (root / "bongard_ow.json").write_text(
        json.dumps([upstream_record(root, uid, urls=True) for uid in every], indent=4), encoding="utf-8"
    )
    (root / "bbox_data.pkl").write_bytes(b"\x80\x04\x95\x00")
    return written


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def hf_release(root: Path, splits: dict[str, list[str]] = UPSTREAM_SPLITS) -> None:
    """The Hugging Face files: `<split>.jsonl` and `bongard_ow.jsonl`, one record per line."""
    for split, uids in splits.items():
        write_jsonl(
            root / f"{split}.jsonl", [json.dumps(upstream_record(root, uid, urls=True)) for uid in uids]
        )
    every = sorted(uid for uids in splits.values() for uid in uids)
    write_jsonl(
        root / "bongard_ow.jsonl", [json.dumps(upstream_record(root, uid, urls=True)) for uid in every]
    )
