"""`bongard datasets download` and the default run's fetch, against a loopback stand-in of GitHub's
raw file host serving the real data in `../shared/data` at the pinned commits' paths: a clone with
nothing beside it gets the classic problems and the usual result; a cut download or a wrong
checksum leaves nothing half-written, says so in one line, and the next try fetches only the rest."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from datasets_io.downloads import SOURCES
from datasets_io.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import RawFileHost
from tests.standins.server import StandInServer

CLASSIC = SOURCES["bongard-classic"]


@dataclass(frozen=True)
class Mirror:
    server: StandInServer
    host: RawFileHost


@pytest.fixture
def classic_mirror(shared_data: Path) -> Iterator[Mirror]:
    host = RawFileHost(
        f"{CLASSIC.repository}/{CLASSIC.commit}/{CLASSIC.folder}", shared_data / "bongard-classic"
    )
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
