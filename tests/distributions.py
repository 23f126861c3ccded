"""Installing a package for one test as `pip install` would leave it: its modules and a dist-info
folder declaring its entry points, in a folder put first on sys.path."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def installed_distribution(
    site: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    modules: Mapping[str, str],
    entry_points: Mapping[str, Mapping[str, str]],
) -> Iterator[None]:
    """`modules` (module name -> source) and `entry_points` (group -> entry name -> `module:object`)
    installed in `site` for the block; its modules are forgotten afterwards."""
    site.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{entry} = {target}\n" for entry, target in entries.items())
            for group, entries in entry_points.items()
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(site))
    try:
        yield
    finally:
        for module in modules:
            sys.modules.pop(module, None)
