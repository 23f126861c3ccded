"""`bongard datasets download` and the default run's fetch, against a loopback mirror serving the real
data in `../shared/data` at the pinned commits' paths: a clone with nothing beside it gets the
classic problems and the usual result; a cut download or a wrong checksum leaves nothing
half-written, says so in one line, and the next try fetches only the rest. Archives whose source
publishes no checksum (the Wonderland sheets on OSF, Bongard-HOI's annotations on Zenodo) are
built here from real panels and made-up records, recorded at their first download and checked
from then on."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from PIL import Image

from datasets_io.catalog import open_dataset
from datasets_io.downloads import SOURCES, DownloadError, RepositoryFiles, download
from datasets_io.downloads.archives import PANEL_PX
from datasets_io.downloads.fetching import sha256_of
from datasets_io.problem import Concept
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.hoi_releases import make_record, write_split
from tests.openworld_releases import github_release
from tests.published_archives import annotations_tar, images_backup, member, sheets_zip
from tests.rwr_plus_releases import LABELS, UPSTREAM_IDS, upstream_folders, upstream_manifest, write_labels
from tests.standins.hub import HubHost
from tests.standins.protocols import RawFileHost
from tests.standins.server import StandInServer

CLASSIC = SOURCES["bongard-classic"]


def files_of(name: str) -> RepositoryFiles:
    found = SOURCES[name].files
    assert found is not None
    return found


CLASSIC_FILES = files_of("bongard-classic")


def served(url: str) -> str:
    """Where a mirror serves `url`: its host and path."""
    return url.split("://", 1)[1]


@dataclass(frozen=True)
class Mirror:
    server: StandInServer
    host: RawFileHost


@pytest.fixture
def classic_mirror(shared_data: Path) -> Iterator[Mirror]:
    host = RawFileHost({served(CLASSIC_FILES.url("")): shared_data / "bongard-classic"})
    with StandInServer(host) as server:
        server.fault_policy = host.cuts(server)
        yield Mirror(server, host)


@pytest.fixture
def bare_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with no data beside it, a home of its own, nothing configured."""
    for variable in ("BONGARD_DATA", "BONGARD_HOME", "BONGARD_DOWNLOAD_MIRROR"):
        monkeypatch.delenv(variable, raising=False)
    (clone := tmp_path / "clone").mkdir()
    return clone


def test_a_bare_clone_fetches_the_classic_problems_and_runs_the_default(
    classic_mirror: Mirror, bare_clone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BONGARD_DOWNLOAD_MIRROR", classic_mirror.server.url)
    home = tmp_path / "home"
    ran = run_bongard("run", "--home", home, cwd=bare_clone, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"no bongard-classic data found: fetching it into {home / 'data'}" in ran.stdout
    assert "github.com/kaminskaz/inzynierka, folder data_raw/bp at commit 051428512114" in ran.stdout
    assert "licence Apache-2.0" in ran.stdout and "bongard-classic: 1201 files checked" in ran.stdout
    store = ResultsStore(home / STORE_FILE)
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.done, summary.solved) == (100, 71)  # the README's figure on ../shared/data
    again = run_bongard("run", "--home", home, cwd=bare_clone, timeout=600)
    assert again.returncode == 0 and "fetching" not in again.stdout  # found in the workspace now
    assert len(classic_mirror.server.requests) == 1201


@pytest.mark.parametrize("fault", ["cut", "corrupt"])
def test_a_broken_download_leaves_nothing_half_written_and_resumes(
    fault: str, classic_mirror: Mirror, bare_clone: Path, tmp_path: Path
) -> None:
    to = tmp_path / "data"
    getattr(classic_mirror.host, fault).add("050/7.png")
    args = ("datasets", "download", "bongard-classic", "--to", to, "--mirror", classic_mirror.server.url)
    failed = run_bongard(*args, cwd=bare_clone)
    assert failed.returncode == 2 and not (to / "bongard-classic").exists()
    message = " ".join(failed.stderr.split())
    why = "does not match its SHA-256" if fault == "corrupt" else "RemoteProtocolError"
    assert "050/7.png" in message and why in message, message
    assert (
        f"nothing was written to {to / 'bongard-classic'}" in message
        and "run the same command again" in message
    )
    first = len(classic_mirror.server.requests)
    getattr(classic_mirror.host, fault).clear()
    resumed = run_bongard(*args, cwd=bare_clone)
    assert resumed.returncode == 0, resumed.stderr
    assert len(list((to / "bongard-classic").rglob("*.png"))) == 1200
    assert len(classic_mirror.server.requests) - first < 1201  # only what the broken try did not keep
    assert not (to / ".bongard-classic.partial").exists()


def test_offline_the_default_run_says_what_to_run(bare_clone: Path, tmp_path: Path) -> None:
    ran = run_bongard(
        "run",
        "--home",
        tmp_path / "home",
        cwd=bare_clone,
        env={"BONGARD_DOWNLOAD_MIRROR": "http://127.0.0.1:9"},
    )
    assert ran.returncode == 2
    assert "bongard datasets download bongard-classic --to DIR" in " ".join(ran.stderr.split())


# --- archives: the Wonderland sheets (OSF) and Bongard-HOI's annotations (Zenodo) ----------------

WONDERLAND = SOURCES["bongard-wonderland"]
SHEETS = WONDERLAND.archives[0]


def test_wonderland_sheets_are_cut_into_panels_read_with_their_rules_and_their_checksum_recorded(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wonderland_files = files_of("bongard-wonderland")
    rules = shared_data / "bongard-classic" / "bp_solutions.json"
    shipped = wonderland_files.manifest()
    assert shipped["data/solutions/bp_solutions.json"] == sha256_of(rules)  # the classic rules, as published
    assert sum(name.startswith("prompts/concepts/concept_prompt_") for name in shipped) == 100
    # the probes are not in ../shared/data: this download fetches the rules and the sheets
    monkeypatch.setattr(
        RepositoryFiles, "manifest", lambda self: {"data/solutions/bp_solutions.json": sha256_of(rules)}
    )
    archive = sheets_zip(shared_data, tmp_path / "bpimgs.zip")
    host = RawFileHost(
        {served(wonderland_files.url("data/solutions")): rules.parent, served(SHEETS.url): archive}
    )
    checksums = tmp_path / "home" / "download-checksums.json"
    with StandInServer(host) as server:
        done = download("bongard-wonderland", tmp_path / "data", server.url, checksums=checksums)
        assert done.recorded == [SHEETS.url]
        pin = {"pin": sha256_of(archive), "installed": True}
        assert json.loads(checksums.read_text()) == {SHEETS.url: pin}  # written once it installed
        dataset = open_dataset("bongard-problems-high-res", done.path / "data")
        problem = dataset.problem("8")
        assert problem.concept is not None and problem.concept.left == "Figures on the right side"
        panel = problem.right[2]  # panel 8 of the sheet
        with Image.open(panel.path) as cut, Image.open(shared_data / "bongard-classic/008/8.png") as drawn:
            assert cut.size == (PANEL_PX, PANEL_PX)
            assert cut.tobytes() == drawn.convert("L").resize((PANEL_PX, PANEL_PX)).tobytes()
        assert len(dataset.problem_ids()) == 100 and not (done.path / ".archives").exists()
        with zipfile.ZipFile(archive) as sheets:  # kept whole too, where the authors keep them
            assert (done.path / "data" / "bpimgs" / "p0008.png").read_bytes() == sheets.read("p0008.png")
        whole = open_dataset("bongard-problems-high-res", done.path / "data", {"sheet": "shipped"})
        assert whole.problem("8").metadata["sheet"] == str(done.path / "data" / "bpimgs" / "p0008.png")
        # a later download finds other bytes at that URL: refused against the recorded checksum
        archive.write_bytes(archive.read_bytes() + b"changed")
        with pytest.raises(DownloadError, match="does not match its SHA-256") as refused:
            download("bongard-wonderland", tmp_path / "again", server.url, checksums=checksums)
    assert (
        "nothing was written" in str(refused.value)
        and not (tmp_path / "again" / "bongard-wonderland").exists()
    )


HOI = SOURCES["bongard-hoi"]
ANNOTATIONS = HOI.archives[0]


def test_hoi_annotations_unpack_as_published_and_an_archive_escaping_its_folder_is_refused(
    bare_clone: Path, tmp_path: Path
) -> None:
    release, images = tmp_path / "release", tmp_path / "hake-images"
    write_split(release, [make_record(images, "a")])
    tar = annotations_tar(tmp_path / "bongard_hoi_annotations.tar", release)
    with StandInServer(RawFileHost({served(ANNOTATIONS.url): tar})) as server:

        def fetch_into(to: Path, home: Path) -> CompletedProcess[str]:
            args = ("datasets", "download", "bongard-hoi", "--to", to, "--home", home, "--mirror", server.url)
            return run_bongard(*args, cwd=bare_clone)

        fetched = fetch_into(tmp_path / "data", tmp_path / "home")
        assert fetched.returncode == 0, fetched.stderr
        said = " ".join(fetched.stdout.split())
        assert "zenodo.org/records/7079175/files/bongard_hoi_annotations.tar" in said
        assert (
            "non-commercial research or evaluation only" in said
            and "now that it installed, is recorded" in said
        )
        dataset = open_dataset("bongard-hoi", tmp_path / "data", {"image_root": str(images)})
        assert [str(problem.concept) for problem in dataset.scan().problems] == [
            str(Concept(left="ride bicycle"))
        ]
        # an archive with a member outside its folder: nothing written anywhere, said in one line
        annotations_tar(tar, release, member("../outside.txt"))
        escaping = fetch_into(tmp_path / "other", tmp_path / "fresh-home")
    assert escaping.returncode == 2 and not (tmp_path / "other" / "bongard-hoi").exists()
    assert not (tmp_path / "other" / "outside.txt").exists()
    assert "was refused" in escaping.stderr and "run the same command again" in escaping.stderr


OPENWORLD = SOURCES["bongard-openworld"]
BACKUP = OPENWORLD.archives[0]


def test_openworld_records_and_the_authors_image_backup_load_and_a_quota_page_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = tmp_path / "upstream"
    github_release(upstream)
    splits = {path.name: sha256_of(path) for path in upstream.glob("bongard_ow_*.json")}
    monkeypatch.setattr(RepositoryFiles, "manifest", lambda self: splits)
    backup = images_backup(upstream, tmp_path / "backup.zip")
    assert OPENWORLD.files is not None
    host = RawFileHost({served(OPENWORLD.files.url("")): upstream, served(BACKUP.url): backup})
    checksums = tmp_path / "home" / "download-checksums.json"
    with StandInServer(host) as server:
        host.web_pages = {backup.name}  # Drive past its quota: a page, not the file
        with pytest.raises(DownloadError, match="answered a web page, not the file") as quota:
            download("bongard-openworld", tmp_path / "data", server.url, checksums=checksums)
        assert "nothing was written" in str(quota.value) and not checksums.exists()
        host.web_pages = set()
        done = download("bongard-openworld", tmp_path / "data", server.url, checksums=checksums)
    assert done.recorded == [BACKUP.url] and "drive.usercontent.google.com" in BACKUP.url
    dataset = open_dataset("bongard-openworld", tmp_path / "data")
    assert sorted(dataset.problem_ids()) == ["0000", "0001", "0002", "0008", "0013"]
    problem = dataset.problem("0008")
    for panel in problem.left + problem.right + problem.test_panels:
        assert panel.path.read_bytes() == (upstream / panel.path.relative_to(done.path)).read_bytes()
    assert not (done.path / "__MACOSX").exists()


RWR_PLUS = SOURCES["bongard-rwr-plus"]


def test_rwr_plus_comes_from_its_hub_collection_pinned_checked_and_loadable(
    bare_clone: Path, tmp_path: Path
) -> None:
    """The Hub's dataset names in the collection are not known here: these two are made up, one in the
    manifest layout (with its labels) and one in the folders layout the authors' scripts write."""
    assert RWR_PLUS.hub is not None
    manifest_variant, folders_variant = tmp_path / "hub" / "manifest", tmp_path / "hub" / "folders"
    upstream_manifest(manifest_variant)
    write_labels(manifest_variant / "labels.csv", LABELS)
    upstream_folders(folders_variant, [1, 2])
    write_labels(folders_variant / "labels.csv", LABELS)
    host = HubHost(
        RWR_PLUS.hub.slug,
        {
            "bongard-rwr-plus/RWR-Plus-Made-Up": manifest_variant,
            "bongard-rwr-plus/RWR-Plus-Folders": folders_variant,
        },
    )
    home = tmp_path / "home"
    with StandInServer(host) as server:

        def fetch_into(to: Path) -> CompletedProcess[str]:
            args = (
                "datasets",
                "download",
                "bongard-rwr-plus",
                "--to",
                to,
                "--home",
                home,
                "--mirror",
                server.url,
            )
            return run_bongard(*args, cwd=bare_clone)

        host.corrupt = {"bongard-rwr-plus/RWR-Plus-Made-Up/images/10.png"}  # an LFS file
        broken = fetch_into(tmp_path / "data")
        assert broken.returncode == 2 and "does not match its SHA-256" in broken.stderr
        assert (
            "nothing was written" in broken.stderr and not (tmp_path / "data" / "bongard-rwr-plus").exists()
        )
        host.corrupt = {"bongard-rwr-plus/RWR-Plus-Folders/results.csv"}  # a small file: its git blob id
        broken = fetch_into(tmp_path / "data")
        assert broken.returncode == 2 and "does not match its git blob id" in broken.stderr
        fetched_before = len(server.requests)
        host.corrupt = set()
        fetched = fetch_into(tmp_path / "data")
        assert fetched.returncode == 0, fetched.stderr
        said = " ".join(fetched.stdout.split())
        assert "huggingface.co/collections/bongard-rwr-plus/" in said and "CC BY 4.0" in said
        assert "high-stakes" in said and "the commit its main branch had at the first download" in said
        resumed = [r.path for r in server.requests[fetched_before:] if "/resolve/" in r.path]
        assert [path.rsplit("/", 1)[-1] for path in resumed] == ["results.csv"]  # the rest were kept
        # a later download fetches the pinned commit, without asking where main is now
        asked = len(server.requests)
        again = fetch_into(tmp_path / "again")
        assert again.returncode == 0, again.stderr
        later = [r.path for r in server.requests[asked:]]
    assert not any(path.endswith("/revision/main") for path in later)
    assert any(f"/tree/{host.commits['bongard-rwr-plus/RWR-Plus-Folders']}?" in path for path in later)
    root = tmp_path / "data" / "bongard-rwr-plus"
    made_up = open_dataset(f"bongard-rwr-plus:{root / 'RWR-Plus-Made-Up'}")
    assert made_up.problem_ids() == [str(number) for number in UPSTREAM_IDS]
    problem = made_up.problem("1001")
    assert problem.concept == Concept(left="Circles", right="Squares")
    for panel in problem.left + problem.right:
        relative = panel.path.relative_to(root / "RWR-Plus-Made-Up")
        assert panel.path.read_bytes() == (manifest_variant / relative).read_bytes()
    assert open_dataset(f"bongard-rwr-plus:{root / 'RWR-Plus-Folders'}").problem_ids() == ["1", "2"]
    assert not (root / "RWR-Plus-Made-Up" / ".gitattributes").exists()


def test_every_shipped_manifest_names_relative_files_with_a_sha256() -> None:
    for found in SOURCES.values():
        assert found.files or found.archives or found.hub, found.name
        for relative, sha in (found.files.manifest() if found.files else {}).items():
            assert len(sha) == 64 and int(sha, 16) >= 0, (found.name, relative)
            assert not relative.startswith("/") and ".." not in relative.split("/"), (found.name, relative)
