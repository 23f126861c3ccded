"""Loaders registered by format name; third parties add theirs by entry point.

A package registers a loader class under the entry-point group
`bongard_agents.loaders`, e.g. `my-format = "my_pkg.loader:MyLoader"`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from datasets_io.errors import DatasetError
from datasets_io.loaders.base import DatasetLoader

ENTRY_POINT_GROUP = "bongard_agents.loaders"
_LOADERS: dict[str, type[DatasetLoader]] = {}
_entry_points_loaded = False


def register_loader(format_name: str) -> Callable[[type[DatasetLoader]], type[DatasetLoader]]:
    """Class decorator: make a loader available under `format_name`."""

    def register(cls: type[DatasetLoader]) -> type[DatasetLoader]:
        cls.format_name = format_name
        _LOADERS[format_name] = cls
        return cls

    return register


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in _LOADERS:
            register_loader(entry.name)(entry.load())


def loader_formats() -> list[str]:
    """Every registered format name, built-in ones first."""
    _load_entry_points()
    return list(_LOADERS)


def loader_class(format_name: str) -> type[DatasetLoader]:
    """The loader for a format, or a `DatasetError` listing the valid formats."""
    _load_entry_points()
    try:
        return _LOADERS[format_name]
    except KeyError:
        raise DatasetError(
            f"unknown dataset format {format_name!r}; formats: {', '.join(_LOADERS)}"
        ) from None
