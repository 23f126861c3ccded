"""SHA-256s recorded at a first download, for sources that publish none we could compute."""

from __future__ import annotations

import json
from pathlib import Path

from datasets_io.fetching import DownloadError


class RecordedChecksums:
    """A JSON file `{url: sha256}`: written as each archive is first fetched, read by every later
    download, which must then match."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.new: list[str] = []
        try:
            self._known: dict[str, str] = json.loads(path.read_text("utf-8")) if path.exists() else {}
        except (OSError, ValueError) as error:
            raise DownloadError(f"{path}: the recorded checksums cannot be read ({error})") from None

    def get(self, url: str) -> str | None:
        return self._known.get(url)

    def record(self, url: str, sha: str) -> None:
        self._known[url] = sha
        self.new.append(url)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        written = self.path.with_name(self.path.name + ".part")
        written.write_text(json.dumps(self._known, indent=1, sort_keys=True) + "\n", "utf-8")
        written.replace(self.path)
