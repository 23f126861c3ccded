"""Loaders registered by format name; third parties add theirs by entry point.

A package registers a loader class under the entry-point group
`bongard_agents.loaders`, e.g. `my-format = "my_pkg.loader:MyLoader"`.
"""

from __future__ import annotations

from collections.abc import Callable

from datasets_io.errors import DatasetError
from datasets_io.loaders.base import DatasetLoader
from datasets_io.plugins import PluginGroup

ENTRY_POINT_GROUP = "bongard_agents.loaders"
_LOADERS: dict[str, type[DatasetLoader]] = {}
_plugins = PluginGroup(ENTRY_POINT_GROUP)


def register_loader(format_name: str) -> Callable[[type[DatasetLoader]], type[DatasetLoader]]:
    """Class decorator: make a loader available under `format_name`."""

    def register(cls: type[DatasetLoader]) -> type[DatasetLoader]:
        cls.format_name = format_name
        _LOADERS[format_name] = cls
        return cls

    return register


def _register_plugin(name: str, loader: type[DatasetLoader]) -> None:
    if name not in _LOADERS:
        register_loader(name)(loader)


def _load_entry_points() -> None:
    _plugins.load_once(_register_plugin)


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
