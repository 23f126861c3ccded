"""A Hugging Face Hub stand-in: the public read API a dataset download uses, over local folders.

It answers as huggingface.co does, under a mirror's `/huggingface.co/` prefix: a collection's items,
a dataset's revision (`sha`), its recursive tree listing (files with `oid`, the git blob id, and for
large files `lfs.oid`, their SHA-256), paged with a `Link: <https://huggingface.co/...>; rel="next"`
header as the Hub pages it, and `resolve/COMMIT/PATH` for a file's bytes. Only the commit it lists
is served: `resolve/main/...` or another commit is a 404, as a commit the Hub does not have is.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.standins.server import Reply

PREFIX = "/huggingface.co"
LFS_FROM_BYTES = 64
"""Files this large or larger are listed as LFS files (the Hub's threshold is larger; a test's
files are small)."""
NOT_FOUND = Reply([b'{"error":"Repository not found"}'], status=404)


def git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class HubHost:
    """`datasets` maps each dataset id (`org/name`) to its folder; `commits` gives each its commit."""

    def __init__(self, collection: str, datasets: dict[str, Path], page_size: int = 3) -> None:
        self.collection = collection
        self.datasets = datasets
        self.commits = {
            name: hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest() for name in datasets
        }
        self.page_size = page_size
        self.corrupt: set[str] = set()
        """Files (`org/name/path`) served with their first byte changed, listed as they are."""
        self.listed_extra: dict[str, list[dict[str, Any]]] = {}
        """Entries added to a dataset's first listing page, as a hostile mirror could list them."""

    def handles(self, method: str, path: str) -> bool:
        return method == "GET" and path.startswith(PREFIX + "/")

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        split = urlsplit(path.removeprefix(PREFIX))
        route, query = split.path, parse_qs(split.query)
        if route == f"/api/collections/{self.collection}":
            items = [{"type": "dataset", "id": name} for name in self.datasets]
            items.append({"type": "paper", "id": "2508.12026"})
            return Reply([json.dumps({"slug": self.collection, "items": items}).encode()])
        for name, folder in self.datasets.items():
            commit = self.commits[name]
            if route == f"/api/datasets/{name}/revision/main":
                return Reply([json.dumps({"id": name, "sha": commit}).encode()])
            if route == f"/api/datasets/{name}/tree/{commit}" and query.get("recursive") == ["true"]:
                return self._page(name, folder, int(query.get("cursor", ["0"])[0]))
            if route.startswith(f"/datasets/{name}/resolve/{commit}/"):
                file = folder / route.removeprefix(f"/datasets/{name}/resolve/{commit}/")
                if file.is_file():
                    data = file.read_bytes()
                    if f"{name}/{file.relative_to(folder).as_posix()}" in self.corrupt:
                        data = bytes([data[0] ^ 0xFF]) + data[1:]
                    return Reply([data], content_type="application/octet-stream")
        return NOT_FOUND

    def _page(self, name: str, folder: Path, start: int) -> Reply:
        files = sorted(path for path in folder.rglob("*") if path.is_file())
        entries = [self._entry(folder, file) for file in files[start : start + self.page_size]]
        entries += self.listed_extra.get(name, []) if start == 0 else []
        headers = {}
        if start + self.page_size < len(files):
            following = (
                f"https://huggingface.co/api/datasets/{name}/tree/{self.commits[name]}"
                f"?recursive=true&cursor={start + self.page_size}"
            )
            headers["link"] = f'<{following}>; rel="next"'
        return Reply([json.dumps(entries).encode()], headers=headers)

    @staticmethod
    def _entry(folder: Path, file: Path) -> dict[str, Any]:
        data = file.read_bytes()
        entry: dict[str, Any] = {
            "type": "file",
            "size": len(data),
            "path": file.relative_to(folder).as_posix(),
        }
        if len(data) < LFS_FROM_BYTES:
            return {**entry, "oid": git_blob(data)}
        sha = hashlib.sha256(data).hexdigest()
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n".encode()
        # an LFS file's `oid` is its pointer's blob; its content's SHA-256 is `lfs.oid`
        return {
            **entry,
            "oid": git_blob(pointer),
            "lfs": {"oid": sha, "size": len(data), "pointerSize": len(pointer)},
        }
