"""A zip or tar archive read as a list of checked members, each written to disk in bounded chunks.

Before a byte is written the whole archive is surveyed: it must end as its format ends (a zip's
central directory, a tar's two zero blocks, a compressed stream's end), which is what tells a cut
body from a whole one when no length was given; every member must be a regular file or a folder
(a link could point anywhere) under a name that stays inside its folder; no member may be larger
than the cap its unpacker sets (the largest genuine member times a margin), and all of them together
must fit on the disk with room to spare. Members are then copied a chunk at a time, never read whole,
so a bomb is refused before it fills the disk or the memory.
"""

from __future__ import annotations

import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from datasets_io.downloads.safe_paths import relative_name

MARGIN = 4
"""How many times its largest genuine member a member may be."""
RESERVE_BYTES = 64 << 20
"""Left free on the disk after unpacking: a full disk breaks more than this download."""
CHUNK_BYTES = 1 << 20
TAR_END = 2 * tarfile.BLOCKSIZE
MiB = 1 << 20


@dataclass(frozen=True)
class Member:
    name: str
    path: PurePosixPath
    """Its name as a checked relative path."""
    size: int


def free_bytes(folder: Path) -> int:
    """Bytes that can still be written where `folder` is (its nearest existing ancestor)."""
    while not folder.exists():
        folder = folder.parent
    return shutil.disk_usage(folder).free


def _sized(count: int) -> str:
    return f"{count / MiB:,.1f} MiB"


class ArchiveReader:
    """An open archive whose `members` (regular files) were surveyed whole; `write` copies one out."""

    def __init__(self, archive: Path, largest_member: int, into: Path) -> None:
        """`largest_member`: bytes of the largest member a genuine archive has; `into`: where its
        members will be written, whose disk they must fit on."""
        self.archive = archive
        self._zip: zipfile.ZipFile | None = None
        self._tar: tarfile.TarFile | None = None
        self._tar_members: dict[str, tarfile.TarInfo] = {}
        self._largest = largest_member
        try:
            self.members = self._zip_members() if zipfile.is_zipfile(archive) else self._tar_members_checked()
            self._check_space(into)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error) as error:
            self.close()
            raise ValueError(f"{archive.name} is not a whole zip or tar archive ({error})") from None
        except ValueError:
            self.close()
            raise

    def _zip_members(self) -> list[Member]:
        self._zip = zipfile.ZipFile(self.archive)
        members = []
        for info in self._zip.infolist():
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise ValueError(f"{self.archive.name} holds a link, {info.filename!r}: refused")
            if not info.is_dir():
                members.append(self._member(info.filename, info.file_size))
        return members

    def _tar_members_checked(self) -> list[Member]:
        """Each header checked as it is read, so a bomb is refused before its data is walked."""
        self._tar = tarfile.open(self.archive)  # noqa: SIM115 (closed by `close`)
        members = []
        for info in self._tar:
            if info.isdir():
                continue
            if not info.isreg():
                kind = "link" if info.issym() or info.islnk() else "special file"
                raise ValueError(f"{self.archive.name} holds a {kind}, {info.name!r}: refused")
            members.append(self._member(info.name, info.size))
            self._tar_members[info.name] = info
        self._tar.fileobj.seek(self._tar.offset)
        if self._tar.fileobj.read(TAR_END) != bytes(TAR_END):
            raise ValueError(f"{self.archive.name} ends before a tar archive's end (cut short?)")
        return members

    def _member(self, name: str, size: int) -> Member:
        """A regular file's member, its name checked to stay inside and its size under the cap."""
        relative = name
        while relative.startswith("./"):
            relative = relative[2:]
        path = relative_name(relative, f"{self.archive.name} member")
        cap = self._largest * MARGIN
        if size > cap:
            raise ValueError(
                f"{self.archive.name} member {name!r} is {_sized(size)}, over the cap of {_sized(cap)} "
                f"({MARGIN} x the largest genuine member, {_sized(self._largest)}): refused"
            )
        return Member(name, path, size)

    def _check_space(self, into: Path) -> None:
        total, free = sum(member.size for member in self.members), free_bytes(into)
        if total > free - RESERVE_BYTES:
            raise ValueError(
                f"{self.archive.name} unpacks to {_sized(total)}, more than the {_sized(free)} free at "
                f"{into} (less {_sized(RESERVE_BYTES)} kept free): refused before writing"
            )

    @contextmanager
    def _opened(self, member: Member) -> Iterator[IO[bytes]]:
        if self._zip is not None:
            with self._zip.open(member.name) as handle:
                yield handle
            return
        assert self._tar is not None
        extracted = self._tar.extractfile(self._tar_members[member.name])
        assert extracted is not None  # a regular file, surveyed
        with extracted:
            yield extracted

    def write(self, member: Member, place: Path) -> None:
        """`member` copied to `place` a chunk at a time, never past its surveyed size; a failure
        (a cut or corrupt member, a full disk) removes what was written and is one `ValueError`."""
        place.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        try:
            with self._opened(member) as source, place.open("wb") as target:
                while chunk := source.read(CHUNK_BYTES):
                    written += len(chunk)
                    if written > member.size:
                        raise ValueError(f"{self.archive.name} member {member.name!r} is larger than it says")
                    target.write(chunk)
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile, tarfile.TarError) as error:
            place.unlink(missing_ok=True)
            detail = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise ValueError(
                f"{self.archive.name} member {member.name!r} could not be written: {detail}"
            ) from None
        except ValueError:
            place.unlink(missing_ok=True)
            raise

    def close(self) -> None:
        for opened in (self._zip, self._tar):
            if opened is not None:
                opened.close()

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
