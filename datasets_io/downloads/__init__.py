"""Datasets fetched from their public sources, pinned and checked, never left half-written.

`download` and `SOURCES` (in `sources`) are the door; behind it, one module a job: `fetching` (one
file over HTTP, whole and checked), `hub` (a Hugging Face collection), `pins` (what a first install
recorded), `archives` (each published archive into its loader's layout), `unpacking` (an archive
surveyed and copied within caps) and `safe_paths` (names from outside kept inside their folder).
"""

from datasets_io.downloads.fetching import MIRROR_ENV, DownloadError
from datasets_io.downloads.sources import (
    SOURCES,
    Archive,
    Downloaded,
    RepositoryFiles,
    Source,
    download,
    source,
)

__all__ = [
    "MIRROR_ENV",
    "SOURCES",
    "Archive",
    "DownloadError",
    "Downloaded",
    "RepositoryFiles",
    "Source",
    "download",
    "source",
]
