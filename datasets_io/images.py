"""Opening panel images safely: every failure becomes a `DatasetError` naming the file."""

from __future__ import annotations

import contextlib
import re
import struct
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from datasets_io.errors import DatasetError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")
DEFAULT_MAX_PIXELS = 40_000_000
"""Larger images are refused before decoding (a decompression bomb guard)."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHUNK_HEAD = struct.Struct(">I4s")
"""A PNG chunk's data length and type; its data and a CRC-32 over type and data follow."""
CRC = struct.Struct(">I")
PNG_SIZE = struct.Struct(">II")
"""Width and height, the first fields of the header chunk."""


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


def open_image(path: Path, *, max_pixels: int = DEFAULT_MAX_PIXELS, oriented: bool = False) -> Image.Image:
    """Decode an image fully, in RGB, or raise a `DatasetError` that says why not.

    Missing, empty, non-image, truncated and over-large files are told apart.
    The pixel limit is checked from the header, before any pixel is decoded. `oriented`: turned
    as its EXIF orientation tag says, as OpenCV's `imread` reads a photo (upstream code that
    reads with it places its boxes on the turned image).
    """
    with _opened(path, max_pixels) as image:
        image.load()
        turned = ImageOps.exif_transpose(image) if oriented else image
        decoded = _to_rgb(turned)
    return decoded


def checked_image(path: Path, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[str, tuple[int, int]]:
    """The format and size of an image file that `open_image` would decode, or its `DatasetError`.

    A PNG is checked without decoding its pixels, and without Pillow: every chunk must be whole
    and match its CRC-32, from the header chunk to the end chunk, as Pillow's `verify` checks, at
    about a tenth of its cost for a classic panel (which is sent as it is, once per call). Other
    formats have no such check in Pillow and are decoded.
    """
    if path.is_file() and (data := path.read_bytes()).startswith(PNG_SIGNATURE):
        try:
            width, height = _png_size(data)
        except ValueError as error:
            raise DatasetError(f"image is corrupt or truncated: {error}", path=path) from None
        _check_pixels(width, height, max_pixels, path)
        return "PNG", (width, height)
    with _opened(path, max_pixels) as image:
        image.load()
        found = image.format or "", image.size
    return found


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG whose chunks are all whole and intact; ValueError saying which is not."""
    view, position, size = memoryview(data), len(PNG_SIGNATURE), None
    while True:
        if position + CHUNK_HEAD.size > len(data):
            raise ValueError(f"the file ends inside a chunk's header at byte {position}")
        length, kind = CHUNK_HEAD.unpack_from(data, position)
        end = position + CHUNK_HEAD.size + length
        if end + CRC.size > len(data):
            raise ValueError(f"the file ends inside chunk {kind.decode('latin-1')!r} at byte {position}")
        if zlib.crc32(view[position + 4 : end]) != CRC.unpack_from(data, end)[0]:
            raise ValueError(f"chunk {kind.decode('latin-1')!r} at byte {position} fails its CRC")
        if size is None:
            if kind != b"IHDR" or length < PNG_SIZE.size:
                raise ValueError("the first chunk is not a PNG header (IHDR)")
            size = PNG_SIZE.unpack_from(data, position + CHUNK_HEAD.size)
        if kind == b"IEND":
            return size
        position = end + CRC.size


def _check_pixels(width: int, height: int, max_pixels: int, path: Path) -> None:
    if width * height > max_pixels:
        raise DatasetError(
            f"image is {width}x{height} = {width * height} pixels, over the limit of "
            f"{max_pixels} (possible decompression bomb)",
            path=path,
        )


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
                _check_pixels(*image.size, max_pixels, path)
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
