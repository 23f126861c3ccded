"""Loaders by format name, built-in and third-party alike, from the entry-point group
`bongard_agents.loaders`.

The toolkit's own formats are declared in its pyproject.toml the way a package adds one:
`my-format = "my_pkg.loader:MyLoader"` names a `DatasetLoader` class, imported only when
that format is used or a folder's layout is to be detected. `register_loader` adds one in
process (notebooks, tests) without packaging it.
"""

from __future__ import annotations

from collections.abc import Callable

from datasets_io.errors import DatasetError
from datasets_io.loaders.base import DatasetLoader
from datasets_io.plugins import Registry, UnknownName

ENTRY_POINT_GROUP = "bongard_agents.loaders"
LOADERS: Registry[type[DatasetLoader]] = Registry(ENTRY_POINT_GROUP, "dataset format", accepts=type)


def register_loader(format_name: str) -> Callable[[type[DatasetLoader]], type[DatasetLoader]]:
    """Class decorator: make a loader available under `format_name`."""
    return LOADERS.decorator(format_name)


def loader_formats() -> list[str]:
    """Every format name, in alphabetical order (the order layouts are detected in)."""
    return sorted(LOADERS.names())


def loader_class(format_name: str) -> type[DatasetLoader]:
    """The loader for a format, or a `DatasetError` with a suggestion and the valid formats."""
    try:
        return LOADERS.get(format_name)
    except UnknownName as error:
        raise DatasetError(str(error)) from None
