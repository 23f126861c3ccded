"""Dataset formats arrive through entry points, the toolkit's own as a package's: listed without
importing them, found by name or by layout, and an unknown name gets a suggestion."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.loaders import registry
from datasets_io.loaders.base import DatasetLoader
from datasets_io.loaders.registry import loader_class, loader_formats
from datasets_io.plugins import Registry
from tests.builders import make_folder_problem
from tests.distributions import installed_distribution

BUILT_IN = [
    "bongard-classic", "bongard-hoi", "bongard-logo", "bongard-openworld", "bongard-rwr", "bongard-rwr-plus",
    "folder",
]  # fmt: skip
PLUGIN = '''
"""A package's own format: the folder layout, told apart by a marker file."""
from pathlib import Path

from datasets_io.loaders.folder import FolderLoader


class MirrorLoader(FolderLoader):
    generic_layout = False

    @classmethod
    def detect(cls, root: Path) -> bool:
        return (root / "MIRROR").is_file()

    @property
    def concept_source(self) -> str:
        return "concept.json, mirrored"
'''


@pytest.fixture
def mirror_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    fresh: Registry[type[DatasetLoader]] = Registry(registry.ENTRY_POINT_GROUP, "dataset format", type)
    monkeypatch.setattr(registry, "LOADERS", fresh)
    with installed_distribution(
        tmp_path / "site",
        monkeypatch,
        "mirror-format",
        {"mirror_format": PLUGIN},
        {registry.ENTRY_POINT_GROUP: {"mirror": "mirror_format:MirrorLoader"}},
    ):
        yield


def test_the_built_in_formats_are_entry_points_like_any_package_s() -> None:
    declared = {entry.name for entry in entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert declared >= set(BUILT_IN)
    assert loader_formats()[: len(BUILT_IN)] == BUILT_IN


def test_an_entry_point_format_is_listed_lazily_opened_by_name_and_detected(
    mirror_format: None, data_dir: Path
) -> None:
    assert loader_formats() == [*BUILT_IN, "mirror"]
    assert "mirror_format" not in sys.modules  # listing names imports no format
    root = data_dir / "mine"
    make_folder_problem(root, "p1", concept={"left": "Triangles", "right": "Circles"})
    (root / "MIRROR").write_text("", encoding="utf-8")
    detected = open_dataset("mine", data_dir)
    assert detected.format_name == "mirror"  # before the generic folder layout it also matches
    assert detected.problem("p1").concept is not None
    named = open_dataset(f"mirror:{root}")
    assert (named.format_name, named.name, named.problem_ids()) == ("mirror", "mine", ["p1"])


def test_an_unknown_format_is_a_dataset_error_with_a_suggestion(mirror_format: None) -> None:
    suggestion = r"unknown dataset format 'mirorr' \(did you mean 'mirror'\?\)"
    with pytest.raises(DatasetError, match=suggestion) as raised:
        loader_class("mirorr")
    listed = str(raised.value).split("dataset format names: ")[1]
    assert sorted(listed.split(", ")) == [*BUILT_IN, "mirror"]
