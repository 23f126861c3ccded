"""A dataset's survey kept between runs, so a run's start-up does not grow with its dataset.

Before its first call a run reads every problem once to plan (`Dataset.survey`): about 1 s per
5,000 problems with warm disks, several seconds cold. The survey depends only on what the loader
reads, so it is kept in the workspace with what it read: the mtime of every folder under the
dataset's root (a file added, removed or renamed changes its folder's), the size and mtime of every
file there that is not an image (manifests, label tables, records), the same of each file the loader
names outside its root (`DatasetLoader.survey_inputs`), the loader's options and its module's source.
It is used again while all of these are unchanged. Checking that takes a stat of each kept folder and
file, not a listing: a folder or file added anywhere changes the mtime of a folder that is kept.
That state is taken after the survey, in a thread beside the run's start (a run's first call does
not wait for the walk), and the survey is kept only where all of it is older than the survey's
start: a change made while the dataset was surveyed is never vouched for. An image's contents are
not read by a survey, so a replaced image keeps it. A loader that cannot name what it reads outside
its root (the default) is surveyed afresh every time.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from datasets_io.catalog import Dataset, ScanResult
from datasets_io.errors import DatasetError
from datasets_io.images import IMAGE_SUFFIXES
from datasets_io.problem import Concept, ProblemSummary

UNREAD_SUFFIXES = frozenset({*IMAGE_SUFFIXES, ".tif", ".tiff"})
"""Files a survey never reads: the images loaders take, and TIFFs some datasets keep beside them."""
VERSION = 2
"""Of the file's layout; another version is surveyed afresh."""
SURVEYS = "surveys"
"""The workspace folder surveys are kept in, a file per dataset."""
MTIME_SLACK_NS = 50_000_000
"""A survey is kept only where what it read was last modified this long before it began, or earlier."""
COARSE_MTIME_SLACK_NS = 2_000_000_000
"""The same on a filesystem that keeps whole seconds (FAT keeps two)."""


def cached_survey(dataset: Dataset, folder: Path) -> ScanResult[ProblemSummary]:
    """The dataset's survey, from `folder` where its inputs are unchanged since it was kept there;
    a new one is kept before this returns."""
    survey, keeping = survey_kept_later(dataset, folder)
    if keeping is not None:
        keeping.join()
    return survey


def survey_kept_later(
    dataset: Dataset, folder: Path
) -> tuple[ScanResult[ProblemSummary], threading.Thread | None]:
    """The dataset's survey, and the thread keeping a new one in `folder` (None: a kept one was
    used, or the loader cannot name its inputs). A run's first call need not wait for the walk of
    the dataset's folders that the kept survey is checked by (0.21 s of 15,000 folders): it is made
    after the survey, beside the run's start."""
    inputs = dataset.loader.survey_inputs()
    if inputs is None:
        return dataset.survey(), None
    if (kept := kept_survey(dataset, folder)) is not None:
        return kept, None
    began_ns = time.time_ns()
    survey = dataset.survey()
    keeping = threading.Thread(
        target=_keep, args=(dataset, inputs, folder, survey, began_ns), name="survey-keeper"
    )
    keeping.start()  # not a daemon: a run that ends first waits for it at exit
    return survey, keeping


def _keep(
    dataset: Dataset, inputs: list[Path], folder: Path, survey: ScanResult[ProblemSummary], began_ns: int
) -> None:
    """Write `survey` with the state of what it read, taken after it: kept only where nothing under
    the root or among the inputs was modified since the survey began (older than its start, the
    state taken after it is the state it read). A survey that cannot be written is not kept."""
    folders, files = _tree(dataset.root)
    header = _header(dataset, inputs)
    if _modified_since(began_ns, [*folders.values(), *_file_mtimes([*files.values(), *map(_stat, inputs)])]):
        return
    path = _kept_path(dataset, folder)
    written = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.part")
    record = {"version": VERSION, "header": header, "folders": folders, "files": files, **_written(survey)}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written.write_text(json.dumps(record), "utf-8")
        written.replace(path)
    except OSError:
        written.unlink(missing_ok=True)


def _file_mtimes(stated: list[str]) -> list[int]:
    """The mtimes of `_stat`'s `size mtime` texts ("missing" has none)."""
    return [int(text.split()[1]) for text in stated if text != "missing"]


def _modified_since(began_ns: int, mtimes: list[int]) -> bool:
    """Whether any of `mtimes` may be later than `began_ns`: within `MTIME_SLACK_NS` of it (a file's
    time is the kernel's clock tick, which trails the clock read), or of its second where the
    filesystem keeps whole seconds only."""
    whole_seconds = all(mtime % 1_000_000_000 == 0 for mtime in mtimes)
    slack = COARSE_MTIME_SLACK_NS if whole_seconds else MTIME_SLACK_NS
    return any(mtime >= began_ns - slack for mtime in mtimes)


def kept_survey(dataset: Dataset, folder: Path) -> ScanResult[ProblemSummary] | None:
    """The survey kept in `folder` while the dataset's inputs are unchanged, else None; never
    surveys or writes (a reading command, such as an export, reads concepts from it)."""
    inputs = dataset.loader.survey_inputs()
    if inputs is None:
        return None
    try:
        stored = json.loads(_kept_path(dataset, folder).read_text("utf-8"))
        if (
            stored.get("version") == VERSION
            and stored.get("header") == _header(dataset, inputs)
            and _unchanged(dataset.root, stored["folders"], stored["files"])
        ):
            return _read(stored)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # none kept, or unreadable
    return None


def _kept_path(dataset: Dataset, folder: Path) -> Path:
    named = f"{dataset.format_name}|{dataset.root.resolve()}"
    return folder / f"{hashlib.sha256(named.encode()).hexdigest()[:24]}.json"


def _header(dataset: Dataset, inputs: list[Path]) -> str:
    """A digest of the format, name and options, the loader's source and the files it names outside
    its root."""
    digest = hashlib.sha256()
    loader = type(dataset.loader)
    digest.update(f"{dataset.format_name}|{dataset.name}|{dataset.loader.options.model_dump_json()}".encode())
    source = inspect.getsourcefile(loader)
    digest.update(Path(source).read_bytes() if source else loader.__qualname__.encode())
    for path in inputs:
        digest.update(f"input {path} {_stat(path)}\n".encode())
    return digest.hexdigest()


def _tree(root: Path) -> tuple[dict[str, int], dict[str, str]]:
    """Every folder under `root` with its mtime, and every file there that is not an image with its
    size and mtime, by path under `root`; linked folders followed once each. An unreadable folder is
    kept with no mtime, so the survey is made afresh until it can be read."""
    folders: dict[str, int] = {}
    files: dict[str, str] = {}
    seen: set[tuple[int, int]] = set()
    top = os.fspath(root)
    cut = len(os.path.join(top, ""))
    pending = [top]
    while pending:
        folder = pending.pop()
        named = folder[cut:] or "."
        try:
            status = os.stat(folder)
            if (status.st_dev, status.st_ino) in seen:
                continue
            seen.add((status.st_dev, status.st_ino))
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir():
                        pending.append(entry.path)
                    elif entry.name[entry.name.rfind(".") :].lower() not in UNREAD_SUFFIXES:
                        files[entry.path[cut:]] = _stat(entry.path)
            folders[named] = status.st_mtime_ns
        except OSError:
            folders[named] = -1
    return folders, files


def _unchanged(root: Path, folders: dict[str, int], files: dict[str, str]) -> bool:
    """Whether every kept folder has its mtime and every kept file its size and mtime: a stat each,
    at 5,000 problems (15,000 folders) a fifth of the time a listing of them took."""
    top = os.fspath(root)
    try:
        if any(os.stat(os.path.join(top, named)).st_mtime_ns != mtime for named, mtime in folders.items()):
            return False
    except OSError:
        return False
    return all(_stat(os.path.join(top, named)) == stated for named, stated in files.items())


def _stat(path: str | Path) -> str:
    try:
        status = os.stat(path)
    except OSError:
        return "missing"
    return f"{status.st_size} {status.st_mtime_ns}"


def _written(survey: ScanResult[ProblemSummary]) -> dict[str, Any]:
    return {
        "problems": [
            {
                "dataset": p.dataset,
                "id": p.id,
                "concept": p.concept.model_dump() if p.concept else None,
                "concept_group": p.concept_group,
                "metadata": dict(p.metadata),
            }
            for p in survey.problems
        ],
        "errors": [
            {
                "reason": e.reason,
                "dataset": e.dataset,
                "problem_id": e.problem_id,
                "path": str(e.path) if e.path is not None else None,
            }
            for e in survey.errors
        ],
    }


def _read(stored: dict[str, Any]) -> ScanResult[ProblemSummary]:
    problems = [
        ProblemSummary(
            p["dataset"],
            p["id"],
            Concept.model_validate(p["concept"]) if p["concept"] else None,
            p["concept_group"],
            p["metadata"],
        )
        for p in stored["problems"]
    ]
    errors = [
        DatasetError(e["reason"], dataset=e["dataset"], problem_id=e["problem_id"], path=e["path"])
        for e in stored["errors"]
    ]
    return ScanResult(problems, errors)
