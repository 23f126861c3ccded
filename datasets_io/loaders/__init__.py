"""Dataset loaders, one module per real upstream format, registered by name."""

from datasets_io.loaders import classic, folder, openworld, rwr, rwr_plus
from datasets_io.loaders.base import DatasetLoader, LoaderOptions
from datasets_io.loaders.registry import loader_class, loader_formats, register_loader

__all__ = [
    "DatasetLoader",
    "LoaderOptions",
    "classic",
    "folder",
    "loader_class",
    "loader_formats",
    "openworld",
    "register_loader",
    "rwr",
    "rwr_plus",
]
