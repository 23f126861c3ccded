"""Dataset loaders, one module per real upstream format, registered by name through entry points."""

from datasets_io.loaders.base import DatasetLoader, LoaderOptions
from datasets_io.loaders.registry import loader_class, loader_formats, register_loader

__all__ = ["DatasetLoader", "LoaderOptions", "loader_class", "loader_formats", "register_loader"]
