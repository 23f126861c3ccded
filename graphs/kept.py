"""Results made once and kept in the workspace for every later run and model.

Bongard in Wonderland's Task 2 asks every model the same probe per problem, written
once by one author; here the first item that needs a probe has it written and every
other item, attempt, run and model reads the kept one. Within a process a lock per
key makes concurrent askers wait for the first; across processes the first file
written wins (a hard link onto the name), so all share one text.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any


class KeptResults:
    """`await kept.get_or_make(kind, key, make)`: the kept value, or `make()`'s, kept from now on."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._locks: dict[Path, asyncio.Lock] = {}

    def path(self, kind: str, key: Sequence[str]) -> Path:
        digest = hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:24]
        return self.folder / kind / f"{digest}.json"

    def read(self, kind: str, key: Sequence[str]) -> dict[str, Any] | None:
        path = self.path(kind, key)
        if not path.is_file():
            return None
        value: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["value"]
        return value

    async def get_or_make(
        self, kind: str, key: Sequence[str], make: Callable[[], Awaitable[dict[str, Any]]]
    ) -> tuple[dict[str, Any], bool]:
        """The value and whether it was made now (False: kept from before, or made by another)."""
        path = self.path(kind, key)
        async with self._locks.setdefault(path, asyncio.Lock()):
            kept = self.read(kind, key)
            if kept is not None:
                return kept, False
            value = await make()
            return self._keep(path, list(key), value)

    def _keep(self, path: Path, key: list[str], value: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Written whole to a temporary file, then linked in place: a reader never sees half a
        file, and a link onto an existing name fails, so the first writer wins."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as file:
            file.write(json.dumps({"key": key, "value": value}, indent=2, ensure_ascii=False))
        try:
            os.link(file.name, path)
        except FileExistsError:  # another process kept one first: everyone uses that one
            kept: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["value"]
            return kept, False
        finally:
            os.unlink(file.name)
        return value, True
