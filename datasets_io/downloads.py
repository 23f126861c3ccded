"""Datasets fetched from their public sources, pinned to a commit and checked file by file.

Each source is a folder of a public repository at one commit, fetched file by file from GitHub's
raw file host (or a mirror of it: `$BONGARD_DOWNLOAD_MIRROR`, `--mirror URL`), every file checked
against the SHA-256 this toolkit ships for it (`data/downloads/NAME.json`, computed from the
upstream files at that commit). Files go to a staging folder beside the target and the folder is
renamed into place only when every file is there and checked: a cut, a refused connection or a
wrong checksum leaves no half-written dataset, and running the same download again keeps the
files already checked and fetches the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import httpx

from datasets_io.errors import BongardError

MIRROR_ENV = "BONGARD_DOWNLOAD_MIRROR"
RAW_HOST = "https://raw.githubusercontent.com"
PARALLEL = 8
TIMEOUT_S = 60.0
Progress = Callable[[int, int], None]
"""`progress(done, total)` after each file."""


class DownloadError(BongardError, RuntimeError):
    """A download that could not finish; the message says where it stopped and what was kept."""


@dataclass(frozen=True)
class Source:
    name: str
    repository: str
    commit: str
    folder: str
    licence: str
    terms: str

    def url(self, relative: str, host: str = RAW_HOST) -> str:
        return f"{host.rstrip('/')}/{self.repository}/{self.commit}/{self.folder}/{relative}"

    def manifest(self) -> dict[str, str]:
        """Relative path -> SHA-256 of every file of the dataset."""
        text = files("datasets_io").joinpath("data", "downloads", f"{self.name}.json").read_text("utf-8")
        manifest: dict[str, str] = json.loads(text)
        return manifest

    def described(self) -> str:
        return (
            f"{self.name}: github.com/{self.repository}, folder {self.folder} at commit {self.commit[:12]}; "
            f"licence {self.licence}; {self.terms}"
        )


SOURCES = {
    "bongard-classic": Source(
        "bongard-classic",
        "kaminskaz/inzynierka",
        "051428512114b110d7b4766f9a573a2efff7c159",
        "data_raw/bp",
        "Apache-2.0",
        "the 100 problems of M. M. Bongard, Pattern Recognition (1970), with their rules",
    ),
    "bongard-rwr": Source(
        "bongard-rwr",
        "pavonism/bongard-rwr",
        "0856fa07a193d7dae6bc3b4edda79c36d8efb000",
        "dataset",
        "MIT",
        "Małkiński et al., ICML 2025; the panels only (its whole-sheet images are rendered here); "
        "its rules are the classic problems', read from bongard-classic",
    ),
}
"""Every dataset with a stable public source this toolkit can fetch and check."""


def source(name: str) -> Source:
    if name not in SOURCES:
        raise DownloadError(
            f"no download for {name!r}; datasets that can be downloaded: {', '.join(SOURCES)}"
        )
    return SOURCES[name]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def download(name: str, to: Path, mirror: str | None = None, progress: Progress | None = None) -> Path:
    """`to/NAME`, fetched and checked (or found there already); a `DownloadError` leaves nothing at
    `to/NAME` and keeps the checked files for the next try."""
    found = source(name)
    target = to / name
    if target.exists():
        return target
    manifest = found.manifest()
    staging = to / f".{name}.partial"
    staging.mkdir(parents=True, exist_ok=True)
    missing = [path for path, sha in manifest.items() if not _checked(staging / path, sha)]
    host = mirror or os.environ.get(MIRROR_ENV) or RAW_HOST
    done = len(manifest) - len(missing)
    if progress:
        progress(done, len(manifest))
    with (
        httpx.Client(timeout=TIMEOUT_S, follow_redirects=True) as client,
        ThreadPoolExecutor(PARALLEL) as pool,
    ):
        futures = {
            pool.submit(_fetch, client, found.url(path, host), staging / path, manifest[path]): path
            for path in missing
        }
        try:
            for future in as_completed(futures):
                future.result()
                done += 1
                if progress:
                    progress(done, len(manifest))
        except DownloadError as error:
            for pending in futures:
                pending.cancel()
            kept = sum(_checked(staging / path, sha) for path, sha in manifest.items())
            raise DownloadError(
                f"{name}: {error}; nothing was written to {target}; {kept} of {len(manifest)} files are "
                f"kept in {staging}: run the same command again to fetch the rest"
            ) from None
    staging.rename(target)
    return target


def _checked(path: Path, sha: str) -> bool:
    return path.is_file() and _sha256(path) == sha


def _fetch(client: httpx.Client, url: str, path: Path, sha: str) -> None:
    """One file, written beside its place and moved there once its checksum is right."""
    part = path.with_name(path.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    try:
        with client.stream("GET", url) as response:
            if response.status_code != 200:
                raise DownloadError(f"{url} answered HTTP {response.status_code}")
            with part.open("wb") as handle:
                for chunk in response.iter_bytes():
                    handle.write(chunk)
    except httpx.HTTPError as error:
        part.unlink(missing_ok=True)
        raise DownloadError(f"{url}: {type(error).__name__}: {error or 'the connection closed'}") from None
    got = _sha256(part)
    if got != sha:
        part.unlink()
        raise DownloadError(f"{url} does not match its SHA-256 (expected {sha[:16]}..., got {got[:16]}...)")
    part.replace(path)
