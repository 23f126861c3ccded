"""Images travel as file paths until the last moment, then are encoded per request.

Strategies put `image_block(path)` into a message. Right before a provider is
called, `prepare_messages` replaces each with a LangChain standard image block
(base64 + MIME type), downscaled so the longer side is at most 1024 px by
default, converted to a format every provider takes, and checked against the
provider's limits. Encoding is deterministic, so cache keys built from the
prepared messages change exactly when the pixels sent change.

An image is decoded, encoded and turned into base64 once per file version and policy
(`EncodedImages`), however many calls send it: a conversation resends its earlier images on
every turn, and a run has its items' images in flight at once (32 items of 12 panels overflowed
the former 256-entry cache, which then missed three times in four).
"""

from __future__ import annotations

import base64
import io
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from PIL import Image

from datasets_io.errors import BongardError, DatasetError
from datasets_io.images import checked_image, open_image

PATH_BLOCK_KEY = "path"
DEFAULT_MAX_SIDE = 1024
SENT_AS_IS = {"PNG": "image/png", "JPEG": "image/jpeg"}


class ImageLimitError(BongardError, ValueError):
    """A request breaks a provider's image limit; the message names the limit."""


@dataclass(frozen=True)
class ImagePolicy:
    """How images are prepared: the longest side in pixels, or None to send them unscaled."""

    max_side: int | None = DEFAULT_MAX_SIDE


@dataclass(frozen=True)
class ImageLimits:
    """A provider's documented limits; None where it sets none."""

    max_images: int | None = None
    max_bytes_per_image: int | None = None
    counts_base64: bool = False
    """The byte limit is on the image as the request carries it, base64 (a third more), as
    Anthropic's is; else on the image's bytes."""
    max_side: int | None = None
    """Pixels on an image's longer side."""
    many_images: tuple[int, int] | None = None
    """(N, S): a request of more than N images takes images of at most S pixels a side (Anthropic)."""
    max_total_bytes: int | None = None
    """All images of a request together, in base64 as it carries them (the payload limit)."""


@dataclass(frozen=True)
class EncodedImage:
    mime_type: str
    base64: str
    """The bytes sent, in base64 (encoded once: a request carries them so)."""
    byte_size: int
    """How many bytes the image is, before base64 (what providers limit)."""
    size: tuple[int, int]

    @classmethod
    def of(cls, mime_type: str, data: bytes, size: tuple[int, int]) -> EncodedImage:
        return cls(mime_type, base64.b64encode(data).decode("ascii"), len(data), size)

    def block(self) -> dict[str, Any]:
        """The LangChain standard content block for this image."""
        return {"type": "image", "base64": self.base64, "mime_type": self.mime_type}


CacheKey = tuple[str, int, int, int | None]
"""An image file's path, modification time (ns) and size, and the longest side asked for."""


class EncodedImages:
    """The process's encoded images, least recently used dropped first, bounded in count and in
    bytes so that neither a long run nor large photographs make memory grow past the bounds."""

    def __init__(self, max_images: int, max_bytes: int) -> None:
        self.max_images = max_images
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._images: OrderedDict[CacheKey, EncodedImage] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # perception and judges may encode from worker threads

    def get(self, key: CacheKey) -> EncodedImage:
        with self._lock:
            found = self._images.get(key)
            if found is not None:
                self.hits += 1
                self._images.move_to_end(key)
                return found
            self.misses += 1
        encoded = _encode(*key)
        with self._lock:
            if key not in self._images:
                self._images[key] = encoded
                self._bytes += len(encoded.base64)
            while len(self._images) > self.max_images or self._bytes > self.max_bytes:
                _, dropped = self._images.popitem(last=False)
                self._bytes -= len(dropped.base64)
        return encoded

    def clear(self) -> None:
        with self._lock:
            self._images.clear()
            self._bytes = self.hits = self.misses = 0


ENCODED = EncodedImages(max_images=4096, max_bytes=256 * 1024 * 1024)
"""Room for every image of 64 items in flight with a conversation of 60 images each, or for
about a thousand downscaled photographs."""


def image_block(path: Path) -> dict[str, Any]:
    """A placeholder for an image in a message, resolved by `prepare_messages`."""
    return {"type": "image", PATH_BLOCK_KEY: str(path)}


def is_path_block(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "image" and PATH_BLOCK_KEY in block


def encode_image(path: Path, policy: ImagePolicy = ImagePolicy()) -> EncodedImage:
    """The bytes to send for an image file (cached per file version and policy); a file that is
    missing or does not decode raises a `DatasetError` naming it, never a PIL error."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise DatasetError("image file is missing", path=path) from None
    return ENCODED.get((str(path), stat.st_mtime_ns, stat.st_size, policy.max_side))


def scaled_size(size: tuple[int, int], max_side: int | None) -> tuple[int, int]:
    """The size an image of `size` is sent at: its longer side brought down to `max_side`."""
    scale = 1.0 if max_side is None else min(1.0, max_side / max(size))
    if scale == 1.0:
        return size
    return (max(1, round(size[0] * scale)), max(1, round(size[1] * scale)))


def sent_size(path: Path, policy: ImagePolicy) -> tuple[int, int]:
    """The size a request would carry the image at, read from its header without encoding it."""
    return scaled_size(checked_image(path)[1], policy.max_side)


def _encode(path: str, _mtime_ns: int, _size: int, max_side: int | None) -> EncodedImage:
    # first: it refuses empty, broken and over-large files by name
    source_format, size = checked_image(Path(path))
    sent = scaled_size(size, max_side)
    if sent == size and source_format in SENT_AS_IS:
        return EncodedImage.of(SENT_AS_IS[source_format], Path(path).read_bytes(), size)
    image = open_image(Path(path))
    if sent != size:
        image = image.resize(sent, Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    if source_format == "JPEG":
        image.save(buffer, format="JPEG", quality=90)
        return EncodedImage.of("image/jpeg", buffer.getvalue(), image.size)
    image.save(buffer, format="PNG")
    return EncodedImage.of("image/png", buffer.getvalue(), image.size)


def count_images(messages: Sequence[BaseMessage]) -> int:
    """The image placeholders of `messages`, before any is encoded."""
    return sum(
        is_path_block(block)
        for message in messages
        if not isinstance(message.content, str)
        for block in message.content
    )


def prepare_messages(
    messages: Sequence[BaseMessage], policy: ImagePolicy, limits: ImageLimits, provider: str
) -> list[BaseMessage]:
    """Copies of `messages` with every path placeholder replaced by an encoded image block."""
    prepared: list[BaseMessage] = []
    sent: list[EncodedImage] = []
    for message in messages:
        if isinstance(message.content, str):
            prepared.append(message)
            continue
        content: list[str | dict[Any, Any]] = []
        for block in message.content:
            if is_path_block(block):
                assert isinstance(block, dict)
                encoded = encode_image(Path(block[PATH_BLOCK_KEY]), policy)
                sent.append(encoded)
                _check_size(encoded, block[PATH_BLOCK_KEY], limits, provider)
                content.append(encoded.block())
            else:
                content.append(block)
        prepared.append(message.model_copy(update={"content": content}))
    _check_request(sent, limits, provider)
    return prepared


def _check_request(sent: list[EncodedImage], limits: ImageLimits, provider: str) -> None:
    """The limits on a request's images together: how many, how large when many, how many bytes."""
    if limits.max_images is not None and len(sent) > limits.max_images:
        raise ImageLimitError(
            f"{provider} accepts at most {limits.max_images} images per request; this one has {len(sent)}"
        )
    if limits.many_images is not None and len(sent) > limits.many_images[0]:
        many, side = limits.many_images
        if (longest := max(max(image.size) for image in sent)) > side:
            raise ImageLimitError(
                f"{provider} accepts images of at most {side} px a side in a request of more than {many} "
                f"images; this one has {len(sent)}, one of {longest} px (lower the image max side)"
            )
    total = sum(len(image.base64) for image in sent)
    if limits.max_total_bytes is not None and total > limits.max_total_bytes:
        raise ImageLimitError(
            f"{provider} accepts at most {limits.max_total_bytes} bytes of images per request in base64; "
            f"this one has {total} (fewer images, or lower the image max side)"
        )


def _check_size(encoded: EncodedImage, path: str, limits: ImageLimits, provider: str) -> None:
    size, counted = (len(encoded.base64), " in base64") if limits.counts_base64 else (encoded.byte_size, "")
    if limits.max_bytes_per_image is not None and size > limits.max_bytes_per_image:
        raise ImageLimitError(
            f"{provider} accepts at most {limits.max_bytes_per_image} bytes per image{counted}; {path} is "
            f"{size} bytes{counted} after preparing (lower the image max side)"
        )
    if limits.max_side is not None and max(encoded.size) > limits.max_side:
        raise ImageLimitError(
            f"{provider} accepts images of at most {limits.max_side} px a side; {path} is "
            f"{encoded.size[0]}x{encoded.size[1]} px after preparing (lower the image max side)"
        )
