"""The architecture page is the map of the code: every module of the five packages is listed under
its folder, and no row names a module that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("datasets_io", "results", "agents", "judges", "graphs")
HEADING = re.compile(r"^### `([^`]+)/`$")
ROW = re.compile(r"^\| `([A-Za-z0-9_]+)` \|")


def listed() -> set[str]:
    """`folder/module` of every row of the page's module tables."""
    found, folder = set(), None
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        if heading := HEADING.match(line):
            folder = heading[1]
        elif (row := ROW.match(line)) and folder is not None:
            found.add(f"{folder}/{row[1]}")
    return found


def modules() -> set[str]:
    return {
        path.relative_to(ROOT).with_suffix("").as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
    }


def test_every_module_is_on_the_architecture_page() -> None:
    assert sorted(modules() - listed()) == []


def test_the_architecture_page_lists_no_module_that_is_gone() -> None:
    assert sorted(listed() - modules()) == []
