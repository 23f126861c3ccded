"""Datasets of a Hugging Face collection, each pinned to one commit and every file checked.

The Hub publishes what a download needs to be checked without a checksum of ours: its tree listing
gives, per file, the SHA-256 of a large (LFS) file and the git blob id of a small one. What it does
not publish is which commit a toolkit means, so each dataset's commit is the one `main` pointed to at
the first download, pinned with the other first-download checksums once the download installs and
fetched from then on (said so), and a listing is always of that commit. Nothing a listing says is
taken as a place unchecked: a dataset id must be `owner/name` in the Hub's characters (its name is
the folder it goes in, one folder per dataset), a commit 40 hexadecimal digits, a listed path a
relative one with no `.` or `..` part (`datasets_io.downloads.safe_paths`). Requests follow the Hub's public
HTTP API (the paths `huggingface_hub` uses): `/api/collections/SLUG`, `/api/datasets/ID/revision/main`,
`/api/datasets/ID/tree/COMMIT?recursive=true` (paged by its `Link: rel="next"` header) and
`/datasets/ID/resolve/COMMIT/PATH`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import httpx

from datasets_io.downloads.fetching import DownloadError, Expected, check_answer, mirrored, unreachable
from datasets_io.downloads.pins import RecordedChecksums
from datasets_io.downloads.safe_paths import UnsafeName, commit_id, hub_dataset_id, relative_name

HUB = "https://huggingface.co"
SKIPPED = frozenset({".gitattributes"})
"""Files of a dataset repository that are the Hub's bookkeeping, not the dataset."""


@dataclass(frozen=True)
class HubFile:
    url: str
    relative: PurePosixPath
    """Where it goes in the dataset: `<dataset name>/<path in its repository>`, checked."""
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
        self, client: httpx.Client, mirror: str | None, recorded: RecordedChecksums, repin: bool = False
    ) -> tuple[list[HubFile], list[str], list[str]]:
        """Every file of every dataset of the collection, each dataset with its pinned commit, and the
        pins replaced (`repin`, or never confirmed by an install)."""
        collection = _json(client, mirrored(f"{HUB}/api/collections/{self.slug}", mirror))
        datasets = [
            str(item.get("id")) for item in collection.get("items", []) if item.get("type") == "dataset"
        ]
        if not datasets:
            raise DownloadError(f"{HUB}/collections/{self.slug} lists no dataset")
        folders: dict[str, str] = {}
        found: list[HubFile] = []
        pinned: list[str] = []
        replaced: list[str] = []
        for dataset in datasets:
            try:
                name = hub_dataset_id(dataset)[1]
            except UnsafeName as error:
                raise DownloadError(f"{HUB}/collections/{self.slug}: {error}") from None
            if name in folders:
                raise DownloadError(
                    f"{HUB}/collections/{self.slug} lists {folders[name]} and {dataset}, which would share "
                    f"the folder {name}"
                )
            folders[name] = dataset
            where = f"{HUB}/api/datasets/{dataset}/revision/main"
            replaced += recorded.forget([where]) if repin else [where] if recorded.unconfirmed(where) else []
            commit = recorded.get(where)
            if commit is None:
                commit = str(_json(client, mirrored(where, mirror)).get("sha"))
                recorded.record(where, commit)
            try:
                commit_id(commit, f"{where} answered the commit")
            except UnsafeName as error:
                raise DownloadError(str(error)) from None
            pinned.append(f"{dataset} at commit {commit[:12]}")
            found += _listed(client, mirror, dataset, name, commit)
        return found, pinned, replaced


def _listed(client: httpx.Client, mirror: str | None, dataset: str, name: str, commit: str) -> list[HubFile]:
    """The files of `dataset` at `commit`, following the listing's pages, each to go in `name/`."""
    files: list[HubFile] = []
    page: str | None = mirrored(f"{HUB}/api/datasets/{dataset}/tree/{commit}?recursive=true", mirror)
    while page is not None:
        response = _get(client, page)
        entries = _decoded(page, response, list)
        for entry in entries:
            path = str(entry.get("path", ""))
            if entry.get("type") != "file" or path in SKIPPED:
                continue
            try:
                relative = relative_name(path, f"{dataset} lists a file whose path")
            except UnsafeName as error:
                raise DownloadError(f"{error}: refused") from None
            lfs = entry.get("lfs")
            expected = Expected("sha256", lfs["oid"]) if lfs else Expected("git-blob", entry["oid"])
            url = f"{HUB}/datasets/{dataset}/resolve/{commit}/{path}"
            files.append(HubFile(url, PurePosixPath(name) / relative, expected))
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
