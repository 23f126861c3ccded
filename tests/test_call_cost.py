"""Work done once per run, not once per call: each image encoded once, each prompt file read once.

The run is a real `bongard run` over classic problems against a stand-in
OpenAI-protocol server; `contrastive-iterative` resends a conversation's earlier
images on every turn, and 32 problems in flight hold 384 images at once.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageFile

from agents.images import ENCODED, CacheKey, EncodedImages, encode_image
from agents.prompt_library import PromptLibrary
from datasets_io.errors import DatasetError
from tests.cli import run_bongard
from tests.standins.server import StandIn, StandInServer

PROBLEMS = 32
PANELS = 12


def images_in(body: Any) -> int:
    return sum(
        part.get("type") == "image_url"
        for message in body["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
    )


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    return standin(responder=lambda body: "Left: one line\nRight: two lines")


def test_each_image_of_a_run_is_encoded_once(
    server: StandInServer, tmp_path: Path, shared_data: Path
) -> None:
    ENCODED.clear()
    result = run_bongard(
        "run",
        "--strategy",
        "contrastive-iterative",
        "--model",
        f"openai-compatible:m@{server.url}/v1",
        "--dataset",
        "bongard-classic",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
        "--problems",
        f"1-{PROBLEMS}",
        "--concurrency",
        str(PROBLEMS),
        "-M",
        "cache=false",
    )
    assert result.returncode == 0, result.stderr
    sent = sum(images_in(request.body) for request in server.model_requests())
    assert sent > 3 * PROBLEMS * PANELS  # each conversation sends its panels again on later turns
    assert ENCODED.misses == PROBLEMS * PANELS  # once per image
    assert ENCODED.hits == sent - ENCODED.misses


def key_of(path: Path) -> CacheKey:
    stat = path.stat()
    return (str(path), stat.st_mtime_ns, stat.st_size, None)


def test_least_recently_used_images_leave_a_full_cache(shared_data: Path) -> None:
    first, second, third = sorted((shared_data / "bongard-classic" / "001").glob("*.png"))[:3]
    by_count = EncodedImages(max_images=2, max_bytes=1 << 20)
    for path in (first, second, first, third):  # `third` pushes out `second`, the least recently used
        by_count.get(key_of(path))
    assert (by_count.hits, by_count.misses) == (1, 3)
    by_count.get(key_of(first))
    by_count.get(key_of(second))
    assert (by_count.hits, by_count.misses) == (2, 4)
    by_size = EncodedImages(max_images=10, max_bytes=len(by_count.get(key_of(first)).base64))
    for path in (first, second, first):  # room for one image's bytes
        by_size.get(key_of(path))
    assert by_size.misses == 3


def test_a_prompt_file_is_read_once_per_library(tmp_path: Path) -> None:
    folder = tmp_path / "case_study"
    folder.mkdir()
    (folder / "intro.md").write_text("<!-- follows: x -->\nfirst $panels_per_side", encoding="utf-8")
    library = PromptLibrary(user_dir=tmp_path)
    assert library.fill("case_study", "intro", panels_per_side=6) == "first 6"
    recorded = dict(library.used)
    (folder / "intro.md").write_text("<!-- follows: x -->\nsecond $panels_per_side", encoding="utf-8")
    assert library.fill("case_study", "intro", panels_per_side=6) == "first 6"  # the version recorded
    assert library.used == recorded
    assert PromptLibrary(user_dir=tmp_path).fill("case_study", "intro", panels_per_side=6) == "second 6"


def damaged_copies(panel: Path, folder: Path) -> dict[str, Path]:
    """A classic panel broken three ways its chunk check catches, and a JPEG cut short (decoded to tell)."""
    data = panel.read_bytes()
    idat = data.index(b"IDAT") + 8
    flipped = data[:idat] + bytes([data[idat] ^ 0xFF]) + data[idat + 1 :]
    jpeg = io.BytesIO()
    Image.open(panel).convert("RGB").save(jpeg, format="JPEG")
    copies = {
        "truncated": data[: len(data) * 2 // 3],
        "flipped-pixel-byte": flipped,
        "no-end": data[: data.index(b"IEND") - 4],
        "jpeg-truncated": jpeg.getvalue()[: len(jpeg.getvalue()) // 2],
    }
    for name, content in copies.items():
        (folder / f"{name}.img").write_bytes(content)
    return {name: folder / f"{name}.img" for name in copies}


def test_a_panel_sent_as_it_is_is_checked_not_decoded_and_a_damaged_one_is_named(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    panel = sorted((shared_data / "bongard-classic" / "001").glob("*.png"))[0]
    decoded: list[str] = []
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: decoded.append(self.format))
    encoded = encode_image(panel)
    assert base64.b64decode(encoded.base64) == panel.read_bytes() and decoded == []  # bytes as they are
    monkeypatch.undo()
    for name, damaged in damaged_copies(panel, tmp_path).items():
        with pytest.raises(DatasetError, match="image is corrupt or truncated") as refused:
            encode_image(damaged)
        assert refused.value.path == damaged, name
