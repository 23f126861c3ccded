"""Every dataset's public source, and the download that fetches, checks, unpacks and pins it.

A dataset is made of parts: files of a public repository at one commit, fetched one by one from
GitHub's raw file host and each checked against the SHA-256 this toolkit ships for it
(`data/downloads/NAME.json`, computed from the upstream files at that commit), and published
archives (OSF, Zenodo, Google Drive), which publish no checksum we could compute, each checked against
the SHA-256 pinned when it first installed, and the datasets of a Hugging Face collection
(`datasets_io.downloads.hub`: each pinned to a commit when it first installed, every file checked against the
digest the Hub lists). Everything gathers in a staging folder beside the target, archives are
unpacked into a folder of their own there (`datasets_io.downloads.unpacking`: surveyed whole, members checked
and capped, copied in chunks) and the staging folder is renamed into place only when every part is
there and checked; only then are new pins written (`RecordedChecksums.save`), so an archive that was
refused leaves no pin for the genuine one to fail against. A cut, a refused connection or a wrong
checksum leaves no half-written dataset, and running the same download again keeps what was checked
and fetches the rest; a refused archive leaves nothing at all. `repin` drops a dataset's pins, for a
source that changed its bytes on purpose. A mirror (`$BONGARD_DOWNLOAD_MIRROR`, `--mirror URL`)
serves `https://HOST/PATH` as `MIRROR/HOST/PATH`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

import httpx

from datasets_io.downloads.archives import (
    unpack_hoi_annotations,
    unpack_openworld_images,
    unpack_wonderland_sheets,
)
from datasets_io.downloads.fetching import (
    DigestMismatch,
    DownloadError,
    Expected,
    fetch,
    mirrored,
)
from datasets_io.downloads.hub import HubCollection, HubFile
from datasets_io.downloads.pins import RecordedChecksums
from datasets_io.downloads.safe_paths import inside

RAW_HOST = "https://raw.githubusercontent.com"
PARALLEL = 8
TIMEOUT_S = 60.0
ARCHIVES = ".archives"
"""Where a staging folder keeps fetched archives until they are unpacked."""
UNPACKING = ".unpacking"
"""Where a staging folder unpacks archives, moved into it only once every archive unpacked."""
OPENWORLD_BACKUP = "1aXr3ihVq0mtzbl6ZNJMogYEyEY-WALNr"
"""The Google Drive file of Bongard-OpenWorld's image backup, linked from the authors' README (GitHub
and Hugging Face) for when the crawled URLs have gone; `confirm=t` skips Drive's page for files too
large to scan."""
Progress = Callable[[int, int], None]
"""`progress(done, total)` after each file or archive."""


@dataclass(frozen=True)
class RepositoryFiles:
    """Files of a folder of a public repository at one commit, listed with their SHA-256 in
    `data/downloads/MANIFEST.json` (paths relative to the folder, kept in the dataset)."""

    repository: str
    commit: str
    folder: str
    manifest_name: str

    def url(self, relative: str) -> str:
        return "/".join(
            part.strip("/")
            for part in (RAW_HOST, self.repository, self.commit, self.folder, relative)
            if part
        )

    def manifest(self) -> dict[str, str]:
        text = (
            files("datasets_io")
            .joinpath("data", "downloads", f"{self.manifest_name}.json")
            .read_text("utf-8")
        )
        manifest: dict[str, str] = json.loads(text)
        return manifest

    def described(self) -> str:
        where = f", folder {self.folder}" if self.folder else ""
        return f"github.com/{self.repository}{where} at commit {self.commit[:12]}"


@dataclass(frozen=True)
class Archive:
    """One published archive, unpacked into the dataset by `unpack(archive, dataset)`. Its source
    publishes no checksum we could compute: its SHA-256 is recorded at the first download and
    checked from then on."""

    url: str
    file_name: str
    unpack: Callable[[Path, Path], None]

    def described(self) -> str:
        return f"{self.url} (its SHA-256 pinned when it first installs)"


@dataclass(frozen=True)
class Source:
    name: str
    licence: str
    terms: str
    files: RepositoryFiles | None = None
    archives: tuple[Archive, ...] = ()
    hub: HubCollection | None = None

    def pinned_urls(self) -> list[str]:
        """The archives whose SHA-256 this source pins (`HubCollection` pins a Hub dataset's commit)."""
        return [archive.url for archive in self.archives]

    def described(self) -> str:
        parts = [self.files.described()] if self.files else []
        parts += [archive.described() for archive in self.archives]
        parts += [self.hub.described()] if self.hub else []
        return f"{self.name}: {'; '.join(parts)}; licence {self.licence}; {self.terms}"


@dataclass
class Downloaded:
    path: Path
    recorded: list[str] = field(default_factory=list)
    """URLs whose SHA-256 was recorded by this download, their source publishing none."""
    pinned: list[str] = field(default_factory=list)
    """Hub datasets with the commit their main branch had at the first download (`ID at commit C`)."""
    count: int = 0
    """Files and archives checked."""
    replaced: list[str] = field(default_factory=list)
    """URLs whose earlier pin was replaced: dropped with `repin`, or never confirmed by an install."""


SOURCES = {
    "bongard-classic": Source(
        "bongard-classic",
        "Apache-2.0",
        "the 100 problems of M. M. Bongard, Pattern Recognition (1970), with their rules",
        files=RepositoryFiles(
            "kaminskaz/inzynierka",
            "051428512114b110d7b4766f9a573a2efff7c159",
            "data_raw/bp",
            "bongard-classic",
        ),
    ),
    "bongard-rwr": Source(
        "bongard-rwr",
        "MIT",
        "Małkiński et al., ICML 2025; the panels only (its whole-sheet images are rendered here); "
        "its rules are the classic problems', read from bongard-classic",
        files=RepositoryFiles(
            "pavonism/bongard-rwr", "0856fa07a193d7dae6bc3b4edda79c36d8efb000", "dataset", "bongard-rwr"
        ),
    ),
    "bongard-wonderland": Source(
        "bongard-wonderland",
        "none stated (the repository carries no licence file; the panels' terms are on their OSF page)",
        "Wüst et al., ICML 2025: its rules (data/solutions), concept probes (prompts/concepts) and the "
        "high-resolution panels of Depeweg, Rothkopf & Jäkel (2024), cropped from their sheets as the "
        "repository's utils/crop_images.py does; read data/ as a data directory",
        files=RepositoryFiles(
            "ml-research/bongard-in-wonderland",
            "da94f708d5306664bb2b886415b2e148e7f2a08e",
            "",
            "bongard-wonderland",
        ),
        archives=(
            Archive(
                "https://files.de-1.osf.io/v1/resources/95dks/providers/osfstorage/65c674103280d80d5da3aa33/?zip=",
                "bpimgs.zip",
                unpack_wonderland_sheets,
            ),
        ),
    ),
    "bongard-openworld": Source(
        "bongard-openworld",
        "code Apache-2.0, data CC BY-NC-SA 4.0",
        "Wu et al., ICLR 2024: the problem records (610 train, 200 validation, 200 test) and the "
        "images as the authors backed them up (their README's Google Drive file), kept in images/<uid>/; "
        "the images were crawled from Google Images and are owned by neither the authors nor this "
        "toolkit: the authors ask that they be deleted once benchmarking is done",
        files=RepositoryFiles(
            "joyjayng/Bongard-OpenWorld",
            "1d46d9dc50da90eb616ec42d0351902db06b2715",
            "assets/data/bongard-ow",
            "bongard-openworld",
        ),
        archives=(
            Archive(
                f"https://drive.usercontent.google.com/download?id={OPENWORLD_BACKUP}&export=download&confirm=t",
                "bongard-openworld-images",
                unpack_openworld_images,
            ),
        ),
    ),
    "bongard-rwr-plus": Source(
        "bongard-rwr-plus",
        "CC BY 4.0, with the authors' note that it is not meant for high-stakes human assessment "
        "(standardized testing, admissions, employment screening, cognitive evaluation)",
        "Pawlonka, Małkiński & Mańdziuk, ICLR 2026: the dataset variants of the authors' Hugging Face "
        "collection, each in a folder of its name; read one as -d bongard-rwr-plus:DIR/bongard-rwr-plus/"
        "VARIANT (labels.csv is read in the variant's folder, else the one above it)",
        hub=HubCollection("bongard-rwr-plus/bongard-rwr-plus-68d2e8b4d1337884f132b2e7"),
    ),
    "bongard-hoi": Source(
        "bongard-hoi",
        "the dataset is Caltech's; the code's NVIDIA Source Code License allows non-commercial research "
        "or evaluation only",
        "Jiang et al., CVPR 2022: the annotations; the HAKE images are Zenodo's bongard_hoi_images.tar "
        "(https://zenodo.org/records/7079175/files/bongard_hoi_images.tar), unpacked as hake/images "
        "in the dataset folder or given with -O image_root=DIR",
        archives=(
            Archive(
                "https://zenodo.org/records/7079175/files/bongard_hoi_annotations.tar",
                "bongard_hoi_annotations.tar",
                unpack_hoi_annotations,
            ),
        ),
    ),
}
"""Every dataset with a stable public source this toolkit can fetch and check."""


def source(name: str) -> Source:
    if name not in SOURCES:
        raise DownloadError(
            f"no download for {name!r}; datasets that can be downloaded: {', '.join(SOURCES)}"
        )
    return SOURCES[name]


def download(
    name: str,
    to: Path,
    mirror: str | None = None,
    progress: Progress | None = None,
    checksums: Path | None = None,
    repin: bool = False,
) -> Downloaded:
    """`to/NAME`, fetched and checked (or found there already); a `DownloadError` leaves nothing at
    `to/NAME` and keeps the checked files for the next try. `checksums` is the file of pins recorded
    at first installs (default `to/.download-checksums.json`); `repin` drops this dataset's pins
    first, taking what the source serves now (they are replaced only if it installs)."""
    found = source(name)
    target = to / name
    if target.exists():
        return Downloaded(target)
    staging = to / f".{name}.partial"
    staging.mkdir(parents=True, exist_ok=True)
    recorded = RecordedChecksums(checksums or to / ".download-checksums.json")
    replaced = recorded.forget(found.pinned_urls()) if repin else []
    replaced += [url for url in found.pinned_urls() if recorded.unconfirmed(url)]
    with httpx.Client(timeout=TIMEOUT_S, follow_redirects=True) as client:
        try:
            hub_files, pinned, replaced_commits = (
                found.hub.files(client, mirror, recorded, repin) if found.hub else ([], [], [])
            )
        except DownloadError as error:
            _drop_if_empty(staging)
            raise DownloadError(f"{name}: {error}; nothing was written to {target}") from None
        wanted = _wanted(found, staging, recorded, hub_files)
        failed = _fetch_missing(client, mirror, wanted, recorded, progress)
    total = len(wanted)
    if failed is not None:
        kept = total - len(_missing(_wanted(found, staging, recorded, hub_files)))
        _drop_if_empty(staging)
        where = f"{kept} of {total} files are kept in {staging}: " if kept else ""
        raise DownloadError(
            f"{name}: {failed}{_repin_hint(found, recorded, failed, mirror)}; nothing was written to "
            f"{target}; {where}run the same command again to fetch the rest"
        )
    _unpack(found, staging)
    staging.rename(target)
    recorded.save()
    archives = {archive.url for archive in found.archives}
    recorded_archives = [url for url in recorded.new if url in archives]
    return Downloaded(target, recorded_archives, pinned, total, replaced=replaced + replaced_commits)


def _fetch_missing(
    client: httpx.Client,
    mirror: str | None,
    wanted: Wanted,
    recorded: RecordedChecksums,
    progress: Progress | None,
) -> DownloadError | None:
    """Every part not yet fetched and checked, in parallel, an archive's new SHA-256 recorded (kept
    until the install); the first failure, returned once every fetch under way has stopped."""
    jobs = _missing(wanted)
    done = len(wanted) - len(jobs)
    if progress:
        progress(done, len(wanted))
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {
            pool.submit(fetch, client, mirrored(url, mirror), path, expected): (url, expected)
            for url, path, expected in jobs
        }
        try:
            for future in as_completed(futures):
                got = future.result()
                url, expected = futures[future]
                if expected is None:
                    recorded.record(url, got)
                done += 1
                if progress:
                    progress(done, len(wanted))
        except DownloadError as error:
            for pending in futures:
                pending.cancel()
            return error  # leaving the pool waits for the fetches under way
    return None


def _repin_hint(found: Source, recorded: RecordedChecksums, error: DownloadError, mirror: str | None) -> str:
    """For a pinned archive that now differs: how to take the new bytes, if the change is wanted."""
    pinned = {mirrored(url, mirror) for url in found.pinned_urls() if recorded.get(url)}
    if not (isinstance(error, DigestMismatch) and error.url in pinned):
        return ""
    return (
        " (pinned when it first installed: if its source changed it on purpose, "
        f"`bongard datasets download {found.name} --repin` takes the new bytes)"
    )


Wanted = list[tuple[str, Path, Expected | None]]
"""(url, place, the digest it must have, or None where none is known yet) of each part."""


def _wanted(found: Source, staging: Path, recorded: RecordedChecksums, hub_files: list[HubFile]) -> Wanted:
    wanted: Wanted = []
    if found.files:
        wanted += [
            (
                found.files.url(path),
                inside(staging, path, "a shipped manifest's file"),
                Expected("sha256", sha),
            )
            for path, sha in found.files.manifest().items()
        ]
    for archive in found.archives:
        sha = recorded.get(archive.url)
        place = staging / ARCHIVES / archive.file_name
        wanted.append((archive.url, place, Expected("sha256", sha) if sha else None))
    wanted += [(file.url, inside(staging, file.relative, "a Hub file"), file.expected) for file in hub_files]
    return wanted


def _missing(wanted: Wanted) -> Wanted:
    """The parts not yet fetched and checked."""
    return [
        (url, path, expected)
        for url, path, expected in wanted
        if not (path.is_file() and expected and expected.matches(path))
    ]


def _unpack(found: Source, staging: Path) -> None:
    """Each archive unpacked into a folder of its own, moved into the staging folder once all are;
    a refused one removes the whole staging folder (nothing of it, nor its pin, is kept)."""
    if not found.archives:
        return
    unpacked = staging / UNPACKING
    shutil.rmtree(unpacked, ignore_errors=True)  # left by a process killed while unpacking
    for archive in found.archives:
        fetched = staging / ARCHIVES / archive.file_name
        try:
            unpacked.mkdir()
            archive.unpack(fetched, unpacked)
        except (OSError, ValueError) as error:
            shutil.rmtree(staging, ignore_errors=True)
            raise DownloadError(
                f"{found.name}: {archive.url} was refused: {error}; nothing of it was kept and no checksum "
                f"was recorded: run the same command again to fetch it anew"
            ) from None
        _move_into(unpacked, staging)
    shutil.rmtree(staging / ARCHIVES, ignore_errors=True)


def _drop_if_empty(staging: Path) -> None:
    """The staging folder removed when it holds no checked file (only folders, or nothing)."""
    if not any(path.is_file() for path in staging.rglob("*")):
        shutil.rmtree(staging, ignore_errors=True)


def _move_into(source: Path, target: Path) -> None:
    """Every file under `source` moved to the same place under `target`, `source` removed."""
    for file in sorted(path for path in source.rglob("*") if not path.is_dir()):
        place = target / file.relative_to(source)
        place.parent.mkdir(parents=True, exist_ok=True)
        file.replace(place)
    shutil.rmtree(source)
