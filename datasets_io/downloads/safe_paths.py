"""Names that arrive from outside (a Hub listing, an archive's members) turned into places inside a folder.

A download writes only where its dataset lives: every name a server or an archive gives is checked as
written (no absolute path, no drive, no backslash, no empty, `.` or `..` part, no control character),
and the place it names is checked again after resolving links, so neither a crafted name nor a link
planted on the way can send a write elsewhere.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

DRIVE = re.compile(r"^[A-Za-z]:")
HUB_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")
"""One part of a Hub repository id: the Hub's letters, digits, `-`, `_` and `.`, at most 96, starting
and ending with a letter or digit (`huggingface_hub`'s own id check also refuses `--` and `..`)."""
COMMIT = re.compile(r"^[0-9a-f]{40}$")


class UnsafeName(ValueError):
    """A name from outside that would place a file outside its folder, or is not a name at all."""


def relative_name(name: str, what: str) -> PurePosixPath:
    """`name` (a `/`-separated relative path) if it stays inside whatever folder it is put in."""
    reason = (
        "is empty" if not name
        else "is absolute" if name.startswith("/")
        else "names a drive" if DRIVE.match(name)
        else "holds a backslash" if "\\" in name
        else "holds a control character" if any(ord(char) < 32 or ord(char) == 127 for char in name)
        else "has an empty, '.' or '..' part" if any(part in ("", ".", "..") for part in name.split("/"))
        else None
    )  # fmt: skip
    if reason is not None:
        raise UnsafeName(f"{what} {name!r} {reason}")
    return PurePosixPath(name)


def inside(root: Path, relative: PurePosixPath | str, what: str) -> Path:
    """`root / relative`, refused unless it stays inside `root` once every link on the way is resolved."""
    name = relative if isinstance(relative, PurePosixPath) else relative_name(relative, what)
    place = root / name
    if not place.resolve().is_relative_to(root.resolve()):
        raise UnsafeName(f"{what} {str(name)!r} leads outside {root} through a link")
    return place


def hub_dataset_id(dataset: str) -> tuple[str, str]:
    """`owner/name` of a Hub dataset as (owner, name), refused unless both are Hub names."""
    parts = dataset.split("/")
    if len(parts) != 2 or not all(
        HUB_NAME.match(part) and ".." not in part and "--" not in part for part in parts
    ):
        raise UnsafeName(f"the Hub dataset id {dataset!r} is not owner/name in the Hub's characters")
    return parts[0], parts[1]


def commit_id(commit: str, what: str) -> str:
    """`commit` if it is a full git commit id (40 hexadecimal digits)."""
    if not COMMIT.match(commit):
        raise UnsafeName(f"{what} {commit!r} is not a git commit id")
    return commit
