"""Entry-point groups through which other packages add loaders, agents and strategies."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any


class PluginGroup:
    """One entry-point group, loaded once, on first need."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.loaded = False

    def load_once(self, register: Callable[[str, Any], None]) -> None:
        """Hand every entry point's loaded object to `register`, the first time only."""
        if self.loaded:
            return
        self.loaded = True
        for entry in entry_points(group=self.group):
            register(entry.name, entry.load())
