"""Pins recorded at a first download, for sources that publish none we could compute.

A pin (an archive's SHA-256, a Hub dataset's commit) is trusted only once the download it came from
installed: `record` keeps it in memory and `save` writes it after the dataset is in place, so bytes
that were refused (a member outside its folder, a cut archive, a web page) are never what a later
download must match. Each pin is stored as `{"pin": VALUE, "installed": true}`; a bare value, as
earlier versions wrote it before unpacking, is an unconfirmed pin: not trusted, replaced by the next
install.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from datasets_io.downloads.fetching import DownloadError

INSTALLED = "installed"


class RecordedChecksums:
    """A JSON file `{url: {"pin": value, "installed": true}}`, read by every download and written
    only when one installs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.new: list[str] = []
        """URLs pinned by this download (written by `save`)."""
        self._pending: dict[str, str] = {}
        self._forgotten: set[str] = set()
        try:
            stored: dict[str, Any] = json.loads(path.read_text("utf-8")) if path.exists() else {}
        except (OSError, ValueError) as error:
            raise DownloadError(f"{path}: the recorded checksums cannot be read ({error})") from None
        if not isinstance(stored, dict):
            raise DownloadError(f"{path}: the recorded checksums are not a JSON object")
        self._stored = stored

    def get(self, url: str) -> str | None:
        """The pin of `url` from an install that happened, or None (none, or one never confirmed)."""
        if url in self._forgotten:
            return None
        entry = self._stored.get(url)
        if isinstance(entry, dict) and entry.get(INSTALLED) is True and isinstance(entry.get("pin"), str):
            return str(entry["pin"])
        return None

    def unconfirmed(self, url: str) -> bool:
        """Whether `url` has a pin that no install confirmed (written by an earlier version on a
        download that may have been refused): it is not trusted, and the next install replaces it."""
        return url in self._stored and self.get(url) is None and url not in self._forgotten

    def record(self, url: str, pin: str) -> None:
        """`url`'s pin from this download, kept until `save` (after the install)."""
        self._pending[url] = pin
        self.new.append(url)

    def forget(self, urls: list[str]) -> list[str]:
        """Drop the pins of `urls` (`--repin`) once this download installs; those it had."""
        had = [url for url in urls if url in self._stored]
        self._forgotten.update(urls)
        return had

    def save(self) -> None:
        """Write this download's pins as installed, and drop the forgotten ones; crash-safe."""
        if not self._pending and not self._forgotten:
            return
        kept = {url: entry for url, entry in self._stored.items() if url not in self._forgotten}
        kept.update({url: {"pin": pin, INSTALLED: True} for url, pin in self._pending.items()})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        written = self.path.with_name(self.path.name + ".part")
        written.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", "utf-8")
        written.replace(self.path)
        self._stored, self._pending, self._forgotten = kept, {}, set()
