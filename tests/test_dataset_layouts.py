"""`bongard datasets list` over one data directory holding every published layout side by side.

Each folder is built by its loader's tests in the upstream layout (the record structure, never
the data) and named freely (Bongard-HOI and Bongard-LOGO are listed by their own tests, which
need a workspace for crops): the listing finds each one's format from its layout and counts its
problems, and `validate` passes on each.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli import run_bongard
from tests.openworld_releases import UPSTREAM_SPLITS, github_release, hf_release
from tests.rwr_plus_releases import LABELS, UPSTREAM_IDS, upstream_folders, upstream_manifest, write_labels
from tests.wonderland_release import WONDERLAND_PROBLEMS, make_wonderland

OPENWORLD_PROBLEMS = sum(map(len, UPSTREAM_SPLITS.values()))
FOLDER_IDS = [1001, 3, 1, 2003]


def test_every_published_layout_is_listed_with_its_format_and_count(tmp_path: Path) -> None:
    make_wonderland(tmp_path / "wonderland")  # its data/ folder is a data directory as it is
    data = tmp_path / "wonderland" / "data"
    github_release(data / "ow-github")
    github_release(data / "ow-splits")
    (data / "ow-splits" / "bongard_ow.json").unlink()  # the split files alone
    hf_release(data / "ow-huggingface")
    for name, plain in (("rwr-plus-objects", False), ("rwr-plus-paths", True)):
        upstream_manifest(data / name, plain=plain)
        write_labels(data / name / "labels.csv", LABELS)
    upstream_folders(data / "rwr-plus-folders", FOLDER_IDS)
    write_labels(data / "rwr-plus-folders" / "labels.csv", LABELS)
    expected = {
        "ow-github": ("bongard-openworld", OPENWORLD_PROBLEMS),
        "ow-splits": ("bongard-openworld", OPENWORLD_PROBLEMS),
        "ow-huggingface": ("bongard-openworld", OPENWORLD_PROBLEMS),
        "rwr-plus-objects": ("bongard-rwr-plus", len(UPSTREAM_IDS)),
        "rwr-plus-paths": ("bongard-rwr-plus", len(UPSTREAM_IDS)),
        "rwr-plus-folders": ("bongard-rwr-plus", len(FOLDER_IDS)),
        "bongard-problems-high-res": ("bongard-classic", len(WONDERLAND_PROBLEMS)),
    }
    listed = run_bongard("datasets", "list", "--data-dir", data)
    assert listed.returncode == 0, listed.stderr
    for name, (format_name, count) in expected.items():
        assert re.search(rf"│ {re.escape(name)}\s+│ {format_name}\s+│ {count}\s+│", listed.stdout), name
    for name in expected:
        validated = run_bongard("datasets", "validate", name, "--data-dir", data)
        assert validated.returncode == 0, (name, validated.stdout, validated.stderr)
