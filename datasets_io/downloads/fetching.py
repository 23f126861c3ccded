"""One file over HTTP, written beside its place and moved there only once it is whole and its digest right.

Whole: a body shorter than its Content-Length is refused; a body sent without one can only be told
whole by what it is (a known digest here, an archive's end where it is unpacked). A web page in a
file's place (a quota or sign-in page, whatever case its content type is written in, or a body that
starts as HTML) is refused, and so is a body that would leave the disk without room to spare.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx

from datasets_io.errors import BongardError

MIRROR_ENV = "BONGARD_DOWNLOAD_MIRROR"
CHUNK_BYTES = 1 << 20
WEB_PAGE_REASONS = "a host's quota, sign-in or confirmation page; try again later"
"""No dataset file is a web page: a host that answers one (Google Drive past its download quota, a
sign-in wall) has not served the file, and its bytes must not be taken, or recorded, as the file."""


WEB_PAGE_TYPES = ("text/html", "application/xhtml+xml")
WEB_PAGE_STARTS = (b"<!doctype html", b"<html")
DISK_RESERVE_BYTES = 64 << 20
"""A download stops before the disk it writes to has less than this left."""


class DownloadError(BongardError, RuntimeError):
    """A download that could not finish; the message says where it stopped and what was kept."""


class DigestMismatch(DownloadError):
    """A fetched file whose digest is not the one it must have."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


def mirrored(url: str, mirror: str | None = None) -> str:
    """`url` as the mirror serves it (`https://HOST/PATH` -> `MIRROR/HOST/PATH`); itself without one."""
    chosen = mirror or os.environ.get(MIRROR_ENV)
    return f"{chosen.rstrip('/')}/{url.split('://', 1)[-1]}" if chosen else url


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_id(path: Path) -> str:
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Expected:
    """A digest a fetched file must have: a SHA-256, or a git blob id (SHA-1 of `blob SIZE\\0BYTES`)."""

    kind: Literal["sha256", "git-blob"]
    digest: str

    def matches(self, path: Path, sha256: str | None = None) -> bool:
        """Whether `path` has this digest (`sha256`: its SHA-256, where already computed)."""
        if self.kind == "git-blob":
            return git_blob_id(path) == self.digest
        return (sha256 or sha256_of(path)) == self.digest

    def named(self) -> str:
        return "SHA-256" if self.kind == "sha256" else "git blob id"


def check_answer(url: str, response: httpx.Response) -> None:
    """A `DownloadError` unless `response` is what was asked for: HTTP 200, and no web page in its place."""
    if response.status_code != 200:
        raise DownloadError(f"{url} answered HTTP {response.status_code}")
    if response.headers.get("content-type", "").strip().lower().startswith(WEB_PAGE_TYPES):
        raise DownloadError(f"{url} answered a web page, not the file ({WEB_PAGE_REASONS})")


def _looks_like_a_web_page(start: bytes) -> bool:
    return start.lstrip()[:16].lower().startswith(WEB_PAGE_STARTS)


def unreachable(url: str, error: httpx.HTTPError) -> DownloadError:
    return DownloadError(f"{url}: {type(error).__name__}: {error or 'the connection closed'}")


def fetch(client: httpx.Client, url: str, path: Path, expected: Expected | None) -> str:
    """`url` saved at `path` once it has the `expected` digest (any, where None); returns its SHA-256."""
    part = path.with_name(path.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    try:
        with client.stream("GET", url) as response:
            check_answer(url, response)
            _save_body(url, response, part)
    except httpx.HTTPError as error:
        part.unlink(missing_ok=True)
        raise unreachable(url, error) from None
    except DownloadError:
        part.unlink(missing_ok=True)
        raise
    got = sha256_of(part)
    if expected is not None and not expected.matches(part, got):
        seen = got if expected.kind == "sha256" else git_blob_id(part)
        part.unlink()
        raise DigestMismatch(
            f"{url} does not match its {expected.named()} "
            f"(expected {expected.digest[:16]}..., got {seen[:16]}...)",
            url,
        )
    part.replace(path)
    return got


def _save_body(url: str, response: httpx.Response, part: Path) -> None:
    """The body written to `part`, refused if it is a web page, shorter than its Content-Length, or
    would leave the disk less than `DISK_RESERVE_BYTES`."""
    with part.open("wb") as handle:
        for number, chunk in enumerate(response.iter_bytes(CHUNK_BYTES)):
            if number == 0 and _looks_like_a_web_page(chunk):
                raise DownloadError(f"{url} answered a web page, not the file ({WEB_PAGE_REASONS})")
            if shutil.disk_usage(part.parent).free - len(chunk) < DISK_RESERVE_BYTES:
                raise DownloadError(
                    f"{url}: the disk at {part.parent} has less than {DISK_RESERVE_BYTES >> 20} MiB free; "
                    "free some space and run the same command again"
                )
            handle.write(chunk)
    declared = response.headers.get("content-length")
    plain = response.headers.get("content-encoding", "identity").lower() == "identity"
    if (
        declared is not None
        and plain
        and declared.isdigit()
        and response.num_bytes_downloaded != int(declared)
    ):
        raise DownloadError(
            f"{url}: the body ended after {response.num_bytes_downloaded} of its {declared} bytes"
        )
