"""One file over HTTP, written beside its place and moved there only once its SHA-256 is right."""

from __future__ import annotations

import hashlib
import os
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


class DownloadError(BongardError, RuntimeError):
    """A download that could not finish; the message says where it stopped and what was kept."""


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
    if response.headers.get("content-type", "").startswith("text/html"):
        raise DownloadError(f"{url} answered a web page, not the file ({WEB_PAGE_REASONS})")


def unreachable(url: str, error: httpx.HTTPError) -> DownloadError:
    return DownloadError(f"{url}: {type(error).__name__}: {error or 'the connection closed'}")


def fetch(client: httpx.Client, url: str, path: Path, expected: Expected | None) -> str:
    """`url` saved at `path` once it has the `expected` digest (any, where None); returns its SHA-256."""
    part = path.with_name(path.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    try:
        with client.stream("GET", url) as response:
            check_answer(url, response)
            with part.open("wb") as handle:
                for chunk in response.iter_bytes():
                    handle.write(chunk)
    except httpx.HTTPError as error:
        part.unlink(missing_ok=True)
        raise unreachable(url, error) from None
    got = sha256_of(part)
    if expected is not None and not expected.matches(part, got):
        seen = got if expected.kind == "sha256" else git_blob_id(part)
        part.unlink()
        raise DownloadError(
            f"{url} does not match its {expected.named()} "
            f"(expected {expected.digest[:16]}..., got {seen[:16]}...)"
        )
    part.replace(path)
    return got
