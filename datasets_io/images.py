"""Opening panel images safely: every failure becomes a `DatasetError` naming the file."""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from datasets_io.errors import DatasetError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")
DEFAULT_MAX_PIXELS = 40_000_000
"""Larger images are refused before decoding (a decompression bomb guard)."""


def find_image(folder: Path, stem: str) -> Path:
    """The image called `stem` with any known suffix in `folder`."""
    for suffix in IMAGE_SUFFIXES:
        for candidate in (folder / f"{stem}{suffix}", folder / f"{stem}{suffix.upper()}"):
            if candidate.is_file():
                return candidate
    raise DatasetError(f"missing image {stem}.* ({'/'.join(IMAGE_SUFFIXES)})", path=folder)


def list_images(folder: Path) -> list[Path]:
    """Image files of a folder in natural order (img2.png before img10.png), hidden files left out."""
    images = [
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_SUFFIXES
    ]
    return sorted(images, key=natural_key)


def natural_key(path: Path | str) -> list[tuple[int, int | str]]:
    """Sort key comparing runs of ASCII digits as numbers and the rest as text (a path by its
    name): img2 before img10, problem 2 before problem 10."""
    name = path.name if isinstance(path, Path) else path
    return [
        (0, int(part)) if part.isascii() and part.isdigit() else (1, part)
        for part in re.split(r"([0-9]+)", name)
        if part
    ]


def open_image(path: Path, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> Image.Image:
    """Decode an image fully, in RGB, or raise a `DatasetError` that says why not.

    Missing, empty, non-image, truncated and over-large files are told apart.
    The pixel limit is checked from the header, before any pixel is decoded.
    """
    with _opened(path, max_pixels) as image:
        image.load()
        decoded = _to_rgb(image)
    return decoded


def checked_image(path: Path, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[str, tuple[int, int]]:
    """The format and size of an image file that `open_image` would decode, or its `DatasetError`.

    A PNG is checked without decoding its pixels: every chunk is read and its checksum verified
    (a sixth of the decode's time for a classic panel, which is sent as it is). Other formats have
    no such check in Pillow and are decoded.
    """
    with _opened(path, max_pixels) as image:
        if image.format == "PNG":
            image.verify()
        else:
            image.load()
        found = image.format or "", image.size
    return found


@contextlib.contextmanager
def _opened(path: Path, max_pixels: int) -> Iterator[Image.Image]:
    """The image opened (header read, size within the limit); any failure inside, named."""
    if not path.is_file():
        raise DatasetError("image file is missing", path=path)
    if path.stat().st_size == 0:
        raise DatasetError("image file is empty (0 bytes)", path=path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                width, height = image.size
                if width * height > max_pixels:
                    raise DatasetError(
                        f"image is {width}x{height} = {width * height} pixels, over the limit of "
                        f"{max_pixels} (possible decompression bomb)",
                        path=path,
                    )
                yield image
    except DatasetError:
        raise
    except UnidentifiedImageError:
        raise DatasetError("not an image file (cannot identify its format)", path=path) from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise DatasetError(f"image too large: {error}", path=path) from None
    except (OSError, SyntaxError, ValueError) as error:
        raise DatasetError(f"image is corrupt or truncated: {error}", path=path) from None


def _to_rgb(image: Image.Image) -> Image.Image:
    """RGB with transparency flattened onto white, the sheet's background."""
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, "white")
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")
