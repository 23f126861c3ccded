"""Work done once per run, not once per call: each image encoded once, each prompt file read once.

The run is a real `bongard run` over classic problems against a stand-in
OpenAI-protocol server; `contrastive-iterative` resends a conversation's earlier
images on every turn, and 32 problems in flight hold 384 images at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.images import ENCODED, CacheKey, EncodedImages
from agents.prompt_library import PromptLibrary
from tests.cli import run_bongard
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer

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
def server() -> Iterator[StandInServer]:
    with StandInServer(OpenAIChat(), responder=lambda body: "Left: one line\nRight: two lines") as running:
        yield running


def test_each_image_of_a_run_is_encoded_once(
    server: StandInServer, tmp_path: Path, shared_data: Path
) -> None:
    ENCODED.clear()
    result = run_bongard(
        "run", "--strategy", "contrastive-iterative", "--model", f"openai-compatible:m@{server.url}/v1",
        "--dataset", "bongard-classic", "--data-dir", shared_data, "--home", tmp_path,
        "--problems", f"1-{PROBLEMS}", "--concurrency", str(PROBLEMS), "-M", "cache=false",
    )  # fmt: skip
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
