"""`bongard datasets download` against a hostile mirror on 127.0.0.1 (issue 47).

A mirror can serve anything in an archive's place: members that name a place outside the dataset's
folder (`../`, an absolute path, a link), a bomb (a 1 GiB member in a 1 MiB archive, a member larger
than the free disk, an image that decodes to billions of pixels), a body cut short with or without
Content-Length, a web page, other bytes than the pinned ones; and a Hub listing can name a dataset
`evil/..` or a file `../x`. Each case is refused in one line (exit 2), writes nothing outside the
dataset's folder, leaves no partial file and records no pin, and the genuine archive then installs
with the same command: a refused first download can no longer poison the pin of the genuine one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.downloads import SOURCES, RepositoryFiles
from datasets_io.downloads.fetching import sha256_of
from tests.cli import run_bongard
from tests.hoi_releases import make_record, write_split
from tests.mounts import small_tmpfs
from tests.openworld_releases import github_release
from tests.published_archives import (
    GiB,
    MiB,
    annotations_tar,
    images_backup,
    member,
    png_header,
    sheets_zip,
    zip_with_zeros,
)
from tests.rwr_plus_releases import LABELS, upstream_manifest, write_labels
from tests.standins.hub import HubHost, git_blob
from tests.standins.protocols import RawFileHost
from tests.standins.server import StandInServer

HOI = SOURCES["bongard-hoi"]
ANNOTATIONS = HOI.archives[0]
CHECKSUMS = "download-checksums.json"
RSS_LIMIT_KIB = 300 * 1024


def served(url: str) -> str:
    return url.split("://", 1)[1]


def download_command(
    name: str, to: Path, home: Path, mirror: StandInServer, *more: str
) -> CompletedProcess[str]:
    """`bongard datasets download NAME` into `to`, from the mirror, with its own workspace."""
    return run_bongard(
        "datasets", "download", name, "--to", to, "--home", home, "--mirror", mirror.url, *more
    )


def refusal(result: CompletedProcess[str]) -> str:
    """The one line a refused command writes (exit 2), and nothing else on stderr."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), (
        result.returncode,
        result.stderr,
    )
    return lines[0]


def files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if not path.is_dir()}


def pins(home: Path) -> dict[str, object]:
    checksums = home / CHECKSUMS
    stored: dict[str, object] = json.loads(checksums.read_text()) if checksums.exists() else {}
    return stored


@dataclass
class HoiMirror:
    """A mirror serving `archive` at the annotation tar's URL, and the genuine tar beside it."""

    server: StandInServer
    host: RawFileHost
    archive: Path
    genuine: bytes
    home: Path
    images: Path

    def download(self, to: Path, *more: str) -> CompletedProcess[str]:
        return download_command("bongard-hoi", to, self.home, self.server, *more)

    def installs(self, to: Path) -> None:
        """The genuine tar, served now, installs with the same command and loads."""
        self.archive.write_bytes(self.genuine)
        self.host.cut, self.host.unsized, self.host.web_pages = set(), set(), set()
        done = self.download(to)
        assert done.returncode == 0, done.stderr
        dataset = open_dataset("bongard-hoi", to, {"image_root": str(self.images)})
        assert len(dataset.scan().problems) == 1
        assert pins(self.home)[ANNOTATIONS.url] == {"pin": sha256_of(self.archive), "installed": True}


@pytest.fixture
def hoi(tmp_path: Path) -> Iterator[HoiMirror]:
    release, images = tmp_path / "release", tmp_path / "hake-images"
    write_split(release, [make_record(images, "a")])
    readme = member("bongard_hoi_release/README", 64 * 1024)  # the tar's last 64 KiB: a cut lands in it
    genuine = annotations_tar(tmp_path / "genuine.tar", release, readme).read_bytes()
    (tmp_path / "served").mkdir()
    archive = tmp_path / "served" / ANNOTATIONS.file_name
    archive.write_bytes(genuine)
    host = RawFileHost({served(ANNOTATIONS.url): archive})
    with StandInServer(host) as server:
        server.fault_policy = host.cuts(server)
        yield HoiMirror(server, host, archive, genuine, tmp_path / "home", images)


def refused_cleanly(mirror: HoiMirror, to: Path, watched: Path, why: str, *more: str) -> str:
    """The download refused in one line naming `why`, nothing written anywhere under `watched` (the
    test's folder), no dataset, partial folder or pin left."""
    before = files_under(watched)
    line = refusal(mirror.download(to, *more))
    assert why in line, line
    assert files_under(watched) == before
    assert not (to / "bongard-hoi").exists() and not (to / ".bongard-hoi.partial").exists()
    assert ANNOTATIONS.url not in pins(mirror.home)
    return line


TAR_ATTACKS: dict[str, tuple[Callable[[Path], tarfile.TarInfo], str]] = {
    "tar-slip": (
        lambda tmp: member("bongard_hoi_release/../../outside.txt"),
        "has an empty, '.' or '..' part",
    ),
    "absolute path": (lambda tmp: member(str(tmp / "absolute.txt")), "is absolute"),
    "symlink": (
        lambda tmp: member("bongard_hoi_release/etc", kind=tarfile.SYMTYPE, link="/etc"),
        "holds a link",
    ),
    "hardlink": (
        lambda tmp: member("bongard_hoi_release/hard", kind=tarfile.LNKTYPE, link="../../outside.txt"),
        "holds a link",
    ),
}


@pytest.mark.parametrize("attack", TAR_ATTACKS, ids=TAR_ATTACKS)
def test_a_tar_member_that_would_leave_its_folder_is_refused_and_the_genuine_tar_installs_after(
    attack: str, hoi: HoiMirror, tmp_path: Path
) -> None:
    build, why = TAR_ATTACKS[attack]
    annotations_tar(hoi.archive, tmp_path / "release", build(tmp_path))
    line = refused_cleanly(hoi, tmp_path / "data", tmp_path, why)
    assert "no checksum was recorded" in line and "run the same command again" in line
    hoi.installs(tmp_path / "data")  # the same command: no pin of the refused bytes stands in the way


@pytest.fixture(scope="module")
def gigabyte_tar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An annotation tar, gzip-compressed, whose last member is 1 GiB of zeros: about 1 MiB on disk."""
    folder = tmp_path_factory.mktemp("bomb")
    write_split(folder / "release", [make_record(folder / "images", "a")])
    bomb = member("bongard_hoi_release/bomb.json", GiB)
    return annotations_tar(folder / "bomb.tar.gz", folder / "release", bomb, mode="w:gz")


def test_a_gigabyte_member_in_a_megabyte_tar_is_over_the_cap(
    hoi: HoiMirror, tmp_path: Path, gigabyte_tar: Path
) -> None:
    assert gigabyte_tar.stat().st_size < 2 * MiB
    hoi.archive.write_bytes(gigabyte_tar.read_bytes())
    refused_cleanly(hoi, tmp_path / "data", tmp_path, "is 1,024.0 MiB, over the cap of")
    hoi.installs(tmp_path / "data")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 128 MiB tmpfs."""
    with small_tmpfs(tmp_path / "small", "128m", "no tmpfs can be mounted here (not root)") as mount:
        yield mount


def test_a_member_larger_than_the_free_disk_is_refused_before_a_byte_is_written(
    hoi: HoiMirror, tmp_path: Path, small_disk: Path
) -> None:
    """192 MiB of zeros, under the cap, on a 128 MiB disk: refused from its header, the disk untouched."""
    bomb = member("bongard_hoi_release/big.json", 192 * MiB)
    annotations_tar(hoi.archive, tmp_path / "release", bomb, mode="w:gz")
    refused_cleanly(hoi, small_disk, tmp_path, "more than the")
    assert not any(small_disk.iterdir())
    hoi.installs(small_disk)


def test_a_cut_body_with_content_length_is_refused(hoi: HoiMirror, tmp_path: Path) -> None:
    hoi.host.cut = {ANNOTATIONS.file_name}
    refused_cleanly(hoi, tmp_path / "data", tmp_path, "RemoteProtocolError")
    hoi.installs(tmp_path / "data")


def test_a_cut_body_without_content_length_is_refused_where_the_tar_does_not_end(
    hoi: HoiMirror, tmp_path: Path
) -> None:
    """No length to check against: the transport sees a whole body; the tar's missing end tells."""
    hoi.host.cut = hoi.host.unsized = {ANNOTATIONS.file_name}
    refused_cleanly(hoi, tmp_path / "data", tmp_path, "not a whole zip or tar archive")
    hoi.installs(tmp_path / "data")


def test_a_web_page_labelled_in_capitals_is_not_taken_for_the_archive(hoi: HoiMirror, tmp_path: Path) -> None:
    hoi.host.web_pages, hoi.host.web_page_type = {ANNOTATIONS.file_name}, "Text/HTML"
    refused_cleanly(hoi, tmp_path / "data", tmp_path, "answered a web page, not the file")
    hoi.installs(tmp_path / "data")


def test_other_bytes_than_the_pinned_ones_are_refused_and_repin_takes_them_on_purpose(
    hoi: HoiMirror, tmp_path: Path
) -> None:
    hoi.installs(tmp_path / "first")
    pinned = pins(hoi.home)
    annotations_tar(hoi.archive, tmp_path / "release", member("bongard_hoi_release/NEWS", 10))
    before = files_under(tmp_path)
    line = refusal(hoi.download(tmp_path / "second"))
    assert "does not match its SHA-256" in line and "bongard datasets download bongard-hoi --repin" in line
    assert files_under(tmp_path) == before and pins(hoi.home) == pinned
    assert not (tmp_path / "second" / ".bongard-hoi.partial").exists()
    changed = hoi.archive.read_bytes()
    hoi.installs(tmp_path / "second")  # the genuine bytes again: the same command installs them
    hoi.archive.write_bytes(changed)
    repinned = hoi.download(tmp_path / "third", "--repin")
    assert repinned.returncode == 0, repinned.stderr
    assert "its earlier pin was replaced" in repinned.stdout
    assert pins(hoi.home)[ANNOTATIONS.url] == {"pin": sha256_of(hoi.archive), "installed": True}


def test_a_pin_no_install_confirmed_is_not_trusted(hoi: HoiMirror, tmp_path: Path) -> None:
    """What earlier versions wrote as a refused archive's bytes arrived: a bare SHA-256."""
    hoi.home.mkdir()
    (hoi.home / CHECKSUMS).write_text(json.dumps({ANNOTATIONS.url: "0" * 64}))
    done = hoi.download(tmp_path / "data")
    assert done.returncode == 0, done.stderr
    assert "its earlier pin was replaced" in done.stdout
    assert pins(hoi.home)[ANNOTATIONS.url] == {"pin": sha256_of(hoi.archive), "installed": True}


# --- Bongard-OpenWorld: the image backup is a zip ------------------------------------------------

OPENWORLD = SOURCES["bongard-openworld"]
BACKUP = OPENWORLD.archives[0]


@dataclass
class OpenWorldMirror:
    server: StandInServer
    backup: Path
    upstream: Path
    splits: dict[str, str]
    home: Path

    def download(self, to: Path) -> CompletedProcess[str]:
        return download_command("bongard-openworld", to, self.home, self.server)


@pytest.fixture
def openworld(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenWorldMirror]:
    upstream = tmp_path / "upstream"
    github_release(upstream)
    splits = {path.name: sha256_of(path) for path in upstream.glob("bongard_ow_*.json")}
    monkeypatch.setattr(RepositoryFiles, "manifest", lambda self: splits)
    (tmp_path / "served").mkdir()
    backup = tmp_path / "served" / "backup.zip"
    assert OPENWORLD.files is not None
    host = RawFileHost({served(OPENWORLD.files.url("")): upstream, served(BACKUP.url): backup})
    with StandInServer(host) as server:
        yield OpenWorldMirror(server, backup, upstream, splits, tmp_path / "home")


def test_a_zip_slip_member_is_refused_and_the_genuine_backup_installs_after(
    openworld: OpenWorldMirror, tmp_path: Path
) -> None:
    images_backup(openworld.upstream, openworld.backup, ("../../escaped/images/0000/outside.jpg", b"x"))
    before = files_under(tmp_path)
    line = refusal(openworld.download(tmp_path / "data"))
    assert "has an empty, '.' or '..' part" in line
    assert files_under(tmp_path) == before and BACKUP.url not in pins(openworld.home)
    assert not (tmp_path / "data" / ".bongard-openworld.partial").exists()
    images_backup(openworld.upstream, openworld.backup)
    done = openworld.download(tmp_path / "data")
    assert done.returncode == 0, done.stderr
    assert sorted(open_dataset("bongard-openworld", tmp_path / "data").problem_ids()) == [
        "0000", "0001", "0002", "0008", "0013",
    ]  # fmt: skip


PEAK_RSS = """
import json, sys
from pathlib import Path
from datasets_io.downloads import RepositoryFiles, download
from datasets_io.downloads.fetching import DownloadError
splits = json.loads(sys.argv[4])
RepositoryFiles.manifest = lambda self: splits
try:
    download("bongard-openworld", Path(sys.argv[1]), sys.argv[2], checksums=Path(sys.argv[3]))
    print("installed")
except DownloadError as error:
    print("refused:", error)
status = Path("/proc/self/status").read_text().splitlines()
print("peak-rss-kib", next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def test_a_gigabyte_image_in_a_megabyte_zip_is_refused_with_the_memory_bounded(
    openworld: OpenWorldMirror, tmp_path: Path
) -> None:
    """The unpacker read each member whole: 2 GiB of memory for this one. Now it is refused from its
        header, in a process that stays under 300 MiB at its peak (Linux's VmHWM: the peak since the process
    began as Python, where ru_maxrss would count the forking test process too)."""
    zip_with_zeros(openworld.backup, "bongard-ow/images/0000/0.jpg", GiB)
    assert openworld.backup.stat().st_size < 2 * MiB
    to, checksums = tmp_path / "data", openworld.home / CHECKSUMS
    script = [sys.executable, "-c", PEAK_RSS, str(to), openworld.server.url, str(checksums)]
    ran = subprocess.run(
        [*script, json.dumps(openworld.splits)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )
    said = dict(line.split(" ", 1) for line in ran.stdout.splitlines() if " " in line)
    assert "over the cap of 128.0 MiB" in said.get("refused:", ""), ran.stdout + ran.stderr
    assert int(said["peak-rss-kib"]) < RSS_LIMIT_KIB, said
    assert not (to / "bongard-openworld").exists() and not (to / ".bongard-openworld.partial").exists()
    assert not checksums.exists()
    images_backup(openworld.upstream, openworld.backup)
    done = openworld.download(to)
    assert done.returncode == 0, done.stderr


# --- the Wonderland sheets: images cut from sheets ------------------------------------------------

WONDERLAND = SOURCES["bongard-wonderland"]
SHEETS = WONDERLAND.archives[0]


@pytest.fixture(scope="module")
def genuine_sheets(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    """The 100 sheets, as OSF serves them, built once for the module."""
    return sheets_zip(shared_data, tmp_path_factory.mktemp("sheets") / "bpimgs.zip")


@pytest.mark.parametrize(
    ("width", "height", "why"),
    [
        (60_000, 60_000, "exceeds limit"),  # over Pillow's own limit: its DecompressionBombError, caught
        (8_000, 8_000, "over the cap of 12,564,992 pixels"),  # under Pillow's limit, over the sheet cap
    ],
)
def test_a_decompression_bomb_sheet_is_refused_in_one_line_before_it_is_decoded(
    width: int,
    height: int,
    why: str,
    genuine_sheets: Path,
    shared_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rules = shared_data / "bongard-classic" / "bp_solutions.json"
    monkeypatch.setattr(
        RepositoryFiles, "manifest", lambda self: {"data/solutions/bp_solutions.json": sha256_of(rules)}
    )
    archive = sheets_zip(shared_data, tmp_path / "bpimgs.zip", first=png_header(width, height))
    files = WONDERLAND.files
    assert files is not None
    host = RawFileHost({served(files.url("data/solutions")): rules.parent, served(SHEETS.url): archive})
    home = tmp_path / "home"
    with StandInServer(host) as server:
        before = files_under(tmp_path)
        args = ("datasets", "download", "bongard-wonderland", "--to", tmp_path / "data", "--home", home)
        line = refusal(run_bongard(*args, "--mirror", server.url))
        assert why in line and "p0001.png" in line and "refused before decoding" in line, line
        assert files_under(tmp_path) == before and not pins(home)
        assert not (tmp_path / "data" / ".bongard-wonderland.partial").exists()
        archive.write_bytes(genuine_sheets.read_bytes())  # the genuine sheets: the same command installs
        done = run_bongard(*args, "--mirror", server.url)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "data" / "bongard-wonderland" / "data" / "bpimgs").glob("p*.png"))) == 100


# --- a Hugging Face collection ---------------------------------------------------------------------

RWR_PLUS = SOURCES["bongard-rwr-plus"]


@pytest.fixture
def classic_key(tmp_path: Path) -> Path:
    """The classic problems' answer key, already in the data folder the collection downloads into."""
    key = tmp_path / "data" / "bongard-classic" / "bp_solutions.json"
    key.parent.mkdir(parents=True)
    key.write_text('{"1": ["genuine", "rules"]}')
    return key


def hub_download(server: StandInServer, tmp_path: Path) -> CompletedProcess[str]:
    args = (
        "datasets",
        "download",
        "bongard-rwr-plus",
        "--to",
        tmp_path / "data",
        "--home",
        tmp_path / "home",
    )
    return run_bongard(*args, "--mirror", server.url)


def test_a_hub_item_id_with_dot_dot_is_refused_and_the_classic_key_is_untouched(
    tmp_path: Path, classic_key: Path
) -> None:
    assert RWR_PLUS.hub is not None
    evil = tmp_path / "evil"
    (evil / "bongard-classic").mkdir(parents=True)
    (evil / "bongard-classic" / "bp_solutions.json").write_text('{"1": ["poisoned", "rules"]}')
    genuine = tmp_path / "hub" / "RWR-Plus-Made-Up"
    upstream_manifest(genuine)
    write_labels(genuine / "labels.csv", LABELS)
    host = HubHost(RWR_PLUS.hub.slug, {"evil/..": evil})
    with StandInServer(host) as server:
        line = refusal(hub_download(server, tmp_path))
        assert "the Hub dataset id 'evil/..' is not owner/name" in line
        assert not any("/resolve/" in request.path for request in server.requests)
        host.datasets = {"bongard-rwr-plus/RWR-Plus-Made-Up": genuine}
        host.commits = {"bongard-rwr-plus/RWR-Plus-Made-Up": "a" * 40}
        done = hub_download(server, tmp_path)
    assert classic_key.read_text() == '{"1": ["genuine", "rules"]}'
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "data" / "bongard-rwr-plus" / "RWR-Plus-Made-Up" / "labels.csv").is_file()


def test_a_listed_path_with_dot_dot_is_refused_and_the_classic_key_is_untouched(
    tmp_path: Path, classic_key: Path
) -> None:
    assert RWR_PLUS.hub is not None
    genuine = tmp_path / "hub" / "RWR-Plus-Made-Up"
    upstream_manifest(genuine)
    write_labels(genuine / "labels.csv", LABELS)
    dataset = "bongard-rwr-plus/RWR-Plus-Made-Up"
    host = HubHost(RWR_PLUS.hub.slug, {dataset: genuine})
    poisoned = b'{"1": ["poisoned", "rules"]}'
    escaping = "../../bongard-classic/bp_solutions.json"
    host.listed_extra = {dataset: [{"type": "file", "path": escaping, "oid": git_blob(poisoned), "size": 28}]}
    with StandInServer(host) as server:
        before = files_under(tmp_path)
        line = refusal(hub_download(server, tmp_path))
        assert f"{dataset} lists a file whose path {escaping!r} has an empty, '.' or '..' part" in line
        assert files_under(tmp_path) == before and not pins(tmp_path / "home")
        host.listed_extra = {}
        done = hub_download(server, tmp_path)
    assert done.returncode == 0, done.stderr
    assert classic_key.read_text() == '{"1": ["genuine", "rules"]}'
