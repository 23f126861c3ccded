"""One file over HTTP, written beside its place and moved there only once its SHA-256 is right."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

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


def fetch(client: httpx.Client, url: str, path: Path, sha: str | None) -> str:
    """`url` saved at `path` once its SHA-256 equals `sha` (any, where `sha` is None); returns it."""
    part = path.with_name(path.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    try:
        with client.stream("GET", url) as response:
            if response.status_code != 200:
                raise DownloadError(f"{url} answered HTTP {response.status_code}")
            if response.headers.get("content-type", "").startswith("text/html"):
                raise DownloadError(f"{url} answered a web page, not the file ({WEB_PAGE_REASONS})")
            with part.open("wb") as handle:
                for chunk in response.iter_bytes():
                    handle.write(chunk)
    except httpx.HTTPError as error:
        part.unlink(missing_ok=True)
        raise DownloadError(f"{url}: {type(error).__name__}: {error or 'the connection closed'}") from None
    got = sha256_of(part)
    if sha is not None and got != sha:
        part.unlink()
        raise DownloadError(f"{url} does not match its SHA-256 (expected {sha[:16]}..., got {got[:16]}...)")
    part.replace(path)
    return got
