"""Folders on mounts a test makes: a workspace nothing may write (a read-only bind mount for root), a
small disk (a tmpfs), for the tests of commands that must refuse or survive them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _read_only_bind(source: Path, target: Path) -> bool:
    target.mkdir()
    mounts = (["mount", "--bind", str(source), str(target)], ["mount", "-o", "remount,bind,ro", str(target)])
    for command in mounts:
        if subprocess.run(command, capture_output=True).returncode != 0:
            subprocess.run(["umount", str(target)], capture_output=True)
            return False
    return True


@contextmanager
def made_read_only(home: Path, tmp_path: Path) -> Iterator[Path]:
    """`home` as a folder nothing may write: by permissions, or for root (whom they do not stop) by a
    read-only bind mount; skipped where neither is possible."""
    if os.geteuid() != 0:
        for file in home.iterdir():
            file.chmod(0o555 if file.is_dir() else 0o444)
        home.chmod(0o555)
        yield home
        home.chmod(0o755)
    elif _read_only_bind(home, tmp_path / "read-only"):
        yield tmp_path / "read-only"
        subprocess.run(["umount", "--lazy", str(tmp_path / "read-only")], check=True)
    else:
        pytest.skip("running as root, where permissions stop no write, and no read-only bind mount allowed")


@contextmanager
def small_tmpfs(mount: Path, size: str, why_skip: str) -> Iterator[Path]:
    """`mount` as a tmpfs of `size` (`1m`, `128m`) for the block; skipped, saying `why_skip`, where no
    tmpfs can be mounted."""
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip(why_skip)
    yield mount
    subprocess.run(["umount", "--lazy", str(mount)], check=True)
