"""Datasets of a Hugging Face collection, each pinned to one commit and every file checked.

The Hub publishes what a download needs to be checked without a checksum of ours: its tree listing
gives, per file, the SHA-256 of a large (LFS) file and the git blob id of a small one. What it does
not publish is which commit a toolkit means, so each dataset's commit is the one `main` pointed to at
the first download, recorded with the other first-download checksums and fetched from then on (said
so), and a listing is always of that commit. Requests follow the Hub's public HTTP API (the paths
`huggingface_hub` uses): `/api/collections/SLUG`, `/api/datasets/ID/revision/main`,
`/api/datasets/ID/tree/COMMIT?recursive=true` (paged by its `Link: rel="next"` header) and
`/datasets/ID/resolve/COMMIT/PATH`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from datasets_io.fetching import DownloadError, Expected, check_answer, mirrored, unreachable
from datasets_io.recorded_checksums import RecordedChecksums

HUB = "https://huggingface.co"
SKIPPED = frozenset({".gitattributes"})
"""Files of a dataset repository that are the Hub's bookkeeping, not the dataset."""


@dataclass(frozen=True)
class HubFile:
    url: str
    relative: Path
    """Where it goes in the dataset: `<dataset name>/<path in its repository>`."""
    expected: Expected


@dataclass(frozen=True)
class HubCollection:
    """The datasets of one public collection (`namespace/slug-id`), each kept in a folder of its name."""

    slug: str

    def described(self) -> str:
        return (
            f"{HUB}/collections/{self.slug} (each dataset at the commit its main branch has at the first "
            "download, recorded and fetched from then on; every file checked against the SHA-256 or git "
            "blob id the Hub lists for it)"
        )

    def files(
        self, client: httpx.Client, mirror: str | None, recorded: RecordedChecksums
    ) -> tuple[list[HubFile], list[str]]:
        """Every file of every dataset of the collection, and each dataset with its pinned commit."""
        collection = _json(client, mirrored(f"{HUB}/api/collections/{self.slug}", mirror))
        datasets = [item["id"] for item in collection.get("items", []) if item.get("type") == "dataset"]
        if not datasets:
            raise DownloadError(f"{HUB}/collections/{self.slug} lists no dataset")
        found: list[HubFile] = []
        pinned: list[str] = []
        for dataset in datasets:
            where = f"{HUB}/api/datasets/{dataset}/revision/main"
            commit = recorded.get(where)
            if commit is None:
                commit = str(_json(client, mirrored(where, mirror))["sha"])
                recorded.record(where, commit)
            pinned.append(f"{dataset} at commit {commit[:12]}")
            found += _listed(client, mirror, dataset, commit)
        return found, pinned


def _listed(client: httpx.Client, mirror: str | None, dataset: str, commit: str) -> list[HubFile]:
    """The files of `dataset` at `commit`, following the listing's pages."""
    name = dataset.rsplit("/", 1)[-1]
    files: list[HubFile] = []
    page: str | None = mirrored(f"{HUB}/api/datasets/{dataset}/tree/{commit}?recursive=true", mirror)
    while page is not None:
        response = _get(client, page)
        entries = _decoded(page, response, list)
        for entry in entries:
            path = str(entry.get("path", ""))
            if entry.get("type") != "file" or path in SKIPPED:
                continue
            if path.startswith("/") or ".." in Path(path).parts:
                raise DownloadError(f"{dataset} lists a file outside its folder: {path!r}")
            lfs = entry.get("lfs")
            expected = Expected("sha256", lfs["oid"]) if lfs else Expected("git-blob", entry["oid"])
            url = f"{HUB}/datasets/{dataset}/resolve/{commit}/{path}"
            files.append(HubFile(url, Path(name) / path, expected))
        following = response.links.get("next", {}).get("url")  # the Hub's own address, mirrored again
        page = mirrored(following, mirror) if following else None
    return files


def _get(client: httpx.Client, url: str) -> httpx.Response:
    try:
        response = client.get(url)
    except httpx.HTTPError as error:
        raise unreachable(url, error) from None
    check_answer(url, response)
    return response


def _json(client: httpx.Client, url: str) -> dict[str, Any]:
    answer: dict[str, Any] = _decoded(url, _get(client, url), dict)
    return answer


def _decoded(url: str, response: httpx.Response, kind: type) -> Any:
    """The reply's JSON, refused in one line unless it is a `kind` (an object, a list)."""
    try:
        answer = response.json()
    except ValueError:
        raise DownloadError(f"{url} answered no JSON") from None
    if not isinstance(answer, kind):
        raise DownloadError(f"{url} answered a JSON {type(answer).__name__}, not a {kind.__name__}")
    return answer
