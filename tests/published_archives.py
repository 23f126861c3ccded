"""The archives the downloads unpack, built here as their sources publish them, and the hostile forms a
mirror could serve in their place: members that leave their folder, links, bombs, cut bodies.

The Wonderland sheets (OSF) are made of the real classic panels, Bongard-HOI's annotation tar
(Zenodo) of made-up records, Bongard-OpenWorld's image backup (Google Drive) of the made-up release
in `tests.openworld_releases`.
"""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from PIL import Image

from datasets_io.downloads.archives import PANEL_PX, WONDERLAND_PROBLEMS, panel_boxes

SHEET_PX = (2231, 1408)
GiB = 1 << 30
MiB = 1 << 20


def sheet_png(shared_data: Path, number: int) -> bytes:
    """Sheet `number` laid out as Depeweg et al.'s: each classic panel scaled to 430 px and placed
    where the Wonderland repository's crop script cuts it."""
    sheet = Image.new("L", SHEET_PX, 255)
    for index, box in enumerate(panel_boxes()):
        with Image.open(shared_data / "bongard-classic" / f"{number:03d}" / f"{index}.png") as panel:
            sheet.paste(panel.convert("L").resize((PANEL_PX, PANEL_PX)), box[:2])
    encoded = io.BytesIO()
    sheet.save(encoded, "PNG", compress_level=1)
    return encoded.getvalue()


def sheets_zip(shared_data: Path, path: Path, first: bytes | None = None) -> Path:
    """A `bpimgs.zip` of the 100 sheets; `first`: other bytes for p0001.png (a bomb), the other 99
    then left blank, since the first refused sheet ends the unpacking."""
    with zipfile.ZipFile(path, "w") as archive:
        for number in WONDERLAND_PROBLEMS:
            if first is None:
                data = sheet_png(shared_data, number)
            else:
                data = first if number == 1 else png_header(8, 8)
            archive.writestr(f"p{number:04d}.png", data)
    return path


def png_header(width: int, height: int) -> bytes:
    """A PNG that says it is `width` x `height` 1-bit pixels, with almost no data: what an image bomb
    shows before it is decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(64)))
        + chunk(b"IEND", b"")
    )


def annotations_tar(path: Path, records: Path, *extra: tarfile.TarInfo, mode: str = "w") -> Path:
    """`bongard_hoi_annotations.tar` as published (`bongard_hoi_release/<split files>`), with `extra`
    members after them (a regular one's bytes are zeros of its size)."""
    with tarfile.open(path, mode) as archive:  # type: ignore[call-overload]
        archive.add(records, arcname="bongard_hoi_release")
        for member in extra:
            archive.addfile(member, Zeros(member.size) if member.isreg() else None)
    return path


def member(name: str, size: int = 1, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    """A tar member's header: a regular file of `size` bytes, or a link (`kind`) to `link`."""
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size if kind == tarfile.REGTYPE else 0, link
    return info


class Zeros(io.RawIOBase):
    """`size` zero bytes read a chunk at a time, so a 1 GiB member is written without holding it."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def images_backup(upstream: Path, path: Path, *extra: tuple[str, bytes]) -> Path:
    """The authors' image backup: `images/<uid>/<file>` one folder down, with a stray member, and
    `extra` (name, bytes) members after them."""
    with zipfile.ZipFile(path, "w") as backup:
        for image in sorted((upstream / "images").rglob("*.jpg")):
            backup.write(image, f"bongard-ow/{image.relative_to(upstream).as_posix()}")
        backup.writestr("__MACOSX/._notes", b"x")
        for name, data in extra:
            backup.writestr(name, data)
    return path


def zip_with_zeros(path: Path, name: str, size: int) -> Path:
    """A zip whose one member is `size` zero bytes, deflated: a 1 GiB member in about 1 MiB."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open(name, "w", force_zip64=True) as handle,
    ):
        for chunk in _zero_chunks(size):
            handle.write(chunk)
    return path


def _zero_chunks(size: int) -> Iterator[bytes]:
    block = bytes(4 * MiB)
    while size > 0:
        yield block[: min(size, len(block))]
        size -= len(block)
