"""A dataset's survey kept between runs, so a run's start-up does not grow with its dataset.

Before its first call a run reads every problem once to plan (`Dataset.survey`): about 1 s per
5,000 problems with warm disks, several seconds cold. The survey depends only on what the loader
reads, so it is kept in the workspace and used again while a signature of those inputs is unchanged:
the mtime of every folder under the dataset's root (a file added, removed or renamed changes its
folder's), the size and mtime of every file there that is not an image (manifests, label tables,
records), the same of each file the loader names outside its root (`DatasetLoader.survey_inputs`),
the loader's options and its module's source. An image's contents are not read by a survey, so a
replaced image keeps it. A loader that cannot name what it reads outside its root (the default) is
surveyed afresh every time.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from pathlib import Path
from typing import Any

from datasets_io.catalog import Dataset, ProblemSummary, ScanResult
from datasets_io.errors import DatasetError
from datasets_io.problem import Concept

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff"})
VERSION = 1
"""Of the file's layout; another version is surveyed afresh."""
SURVEYS = "surveys"
"""The workspace folder surveys are kept in, a file per dataset."""


def cached_survey(dataset: Dataset, folder: Path) -> ScanResult[ProblemSummary]:
    """The dataset's survey, from `folder` where its inputs are unchanged since it was kept there."""
    inputs = dataset.loader.survey_inputs()
    if inputs is None:
        return dataset.survey()
    signature = _signature(dataset, inputs)
    named = f"{dataset.format_name}|{dataset.root.resolve()}"
    kept = folder / f"{hashlib.sha256(named.encode()).hexdigest()[:24]}.json"
    try:
        stored = json.loads(kept.read_text("utf-8"))
        if stored.get("version") == VERSION and stored.get("signature") == signature:
            return _read(stored)
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none kept, or unreadable: surveyed afresh and kept anew
    survey = dataset.survey()
    folder.mkdir(parents=True, exist_ok=True)
    written = kept.with_name(kept.name + f".{os.getpid()}.part")
    written.write_text(json.dumps({"version": VERSION, "signature": signature, **_written(survey)}), "utf-8")
    written.replace(kept)
    return survey


def _signature(dataset: Dataset, inputs: list[Path]) -> str:
    digest = hashlib.sha256()
    loader = type(dataset.loader)
    digest.update(f"{dataset.format_name}|{dataset.name}|{dataset.loader.options.model_dump_json()}".encode())
    source = inspect.getsourcefile(loader)
    digest.update(Path(source).read_bytes() if source else loader.__qualname__.encode())
    for line in _tree(dataset.root):
        digest.update(line.encode())
    for path in inputs:
        digest.update(f"input {path} {_stat(path)}\n".encode())
    return digest.hexdigest()


def _tree(root: Path) -> list[str]:
    """A line per folder (its mtime) and per file that is not an image (size and mtime) under
    `root`, linked folders followed once each."""
    lines: list[str] = []
    seen: set[tuple[int, int]] = set()
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            status = folder.stat()
            if (status.st_dev, status.st_ino) in seen:
                continue
            seen.add((status.st_dev, status.st_ino))
            lines.append(f"dir {folder.relative_to(root)} {status.st_mtime_ns}\n")
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir():
                        pending.append(Path(entry.path))
                    elif os.path.splitext(entry.name)[1].lower() not in IMAGE_SUFFIXES:
                        lines.append(f"file {Path(entry.path).relative_to(root)} {_stat(Path(entry.path))}\n")
        except OSError as error:
            lines.append(f"unreadable {folder} {error.errno}\n")
    return sorted(lines)


def _stat(path: Path) -> str:
    try:
        status = path.stat()
    except OSError:
        return "missing"
    return f"{status.st_size} {status.st_mtime_ns}"


def _written(survey: ScanResult[ProblemSummary]) -> dict[str, Any]:
    return {
        "problems": [
            {
                "dataset": p.dataset, "id": p.id, "concept": p.concept.model_dump() if p.concept else None,
                "concept_group": p.concept_group, "metadata": dict(p.metadata),
            }
            for p in survey.problems
        ],
        "errors": [
            {"reason": e.reason, "dataset": e.dataset, "problem_id": e.problem_id,
             "path": str(e.path) if e.path is not None else None}
            for e in survey.errors
        ],
    }  # fmt: skip


def _read(stored: dict[str, Any]) -> ScanResult[ProblemSummary]:
    problems = [
        ProblemSummary(
            p["dataset"], p["id"], Concept.model_validate(p["concept"]) if p["concept"] else None,
            p["concept_group"], p["metadata"],
        )
        for p in stored["problems"]
    ]  # fmt: skip
    errors = [
        DatasetError(e["reason"], dataset=e["dataset"], problem_id=e["problem_id"], path=e["path"])
        for e in stored["errors"]
    ]
    return ScanResult(problems, errors)
