"""Shared fixtures: the real Bongard data in `../shared/data`, used in place."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.builders import copy_classic_subset
from tests.data_paths import SHARED_DATA_ENV, shared_data_dir
from tests.ray_clusters import LOOPBACK_ONLY, loopback_cluster
from tests.standins.protocols import OpenAIChat
from tests.standins.server import Responder, StandIn, StandInServer, WireProtocol

if TYPE_CHECKING:
    from datasets_io.problem import BongardProblem

ONE_CORE_EACH = {"LLAMA_ARG_THREADS": "1", "OMP_NUM_THREADS": "1"}
"""Under xdist each worker has a core: a llama.cpp server (its own variable) and torch use one
thread. A llama.cpp server decoding with as many threads as cores while another process keeps one
busy slows down about fivefold (measured: 43 s alone on one thread, 205 s on two beside a busy
loop), its threads waiting on each other."""

os.environ.setdefault(LOOPBACK_ONLY, "0")  # before any test imports Ray (tests/ray_clusters.py)
if os.environ.get("PYTEST_XDIST_WORKER"):
    for variable, value in ONE_CORE_EACH.items():
        os.environ.setdefault(variable, value)


FDS_BEFORE_COLLECTING = 256
"""Open files past which a test's end runs a full collection (`/proc/self/fd` is counted)."""


@pytest.fixture(autouse=True)
def _stores_left_in_cycles_closed() -> Iterator[None]:
    """Results stores and response caches that a test leaves in reference cycles keep their SQLite
    files open until a full collection, which a worker rarely makes: an xdist worker reached 1,024
    open files (`select()` then refuses a socket) over a full run. Collected once many are open."""
    yield
    fd_folder = Path("/proc/self/fd")
    if fd_folder.is_dir() and len(os.listdir(fd_folder)) > FDS_BEFORE_COLLECTING:
        gc.collect()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder; its absence is a failure, not a skip."""
    path = shared_data_dir()
    assert (path / "bongard-classic").is_dir() and (path / "bongard-rwr").is_dir(), (
        f"real Bongard data not found at {path}; set {SHARED_DATA_ENV}"
    )
    return path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """An empty data directory for datasets a test builds."""
    return (tmp_path / "data").resolve()


@pytest.fixture
def classic_copy(shared_data: Path, tmp_path: Path) -> Path:
    """A data directory holding a copy of classic problems 1-3, for tests that damage a panel or a
    rules file."""
    copy_classic_subset(shared_data, tmp_path / "data" / "bongard-classic", [1, 2, 3])
    return tmp_path / "data"


@pytest.fixture
def root(data_dir: Path, request: pytest.FixtureRequest) -> Path:
    """The folder of the dataset under test, named by the test module's `FORMAT`."""
    return data_dir / str(request.module.FORMAT)


@pytest.fixture
def standin() -> Iterator[StandIn]:
    """Starts stand-in servers for one test, `standin(protocol=OpenAIChat(), responder=...)`, and
    stops them after it: the one place a test gets a model server speaking a wire protocol."""
    with ExitStack() as stack:

        def start(protocol: WireProtocol | None = None, responder: Responder | None = None) -> StandInServer:
            return stack.enter_context(StandInServer(protocol or OpenAIChat(), responder))

        yield start


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    """An OpenAI-protocol stand-in answering "stand-in reply"; a module needing other replies
    defines its own `server` from `standin`."""
    return standin()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh workspace (`$BONGARD_HOME`) and working directory for one test."""
    monkeypatch.setenv("BONGARD_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace shared by one test module; the local model servers it started stop after it."""
    from agents.servers import stop_all

    path = tmp_path_factory.mktemp("module-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BONGARD_HOME", str(path))
        yield path
    stop_all()


@pytest.fixture(scope="session")
def rwr(shared_data: Path) -> list[BongardProblem]:
    """The Bongard-RWR problems, as scanned."""
    from datasets_io.catalog import open_dataset

    return open_dataset("bongard-rwr", shared_data).scan().problems


@pytest.fixture(scope="session")
def rwr_31(rwr: list[BongardProblem]) -> BongardProblem:
    """Bongard-RWR problem 31 (one line vs two lines), with one test image per side."""
    return next(p for p in rwr if p.id == "31")


@pytest.fixture(scope="session")
def classic(shared_data: Path) -> list[BongardProblem]:
    """The classic Bongard problems, as scanned (no held-out test panels)."""
    from datasets_io.catalog import open_dataset

    return open_dataset("bongard-classic", shared_data).scan().problems


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A real Ray cluster on 127.0.0.1: a head and two worker nodes, one CPU each, each its own
    raylet; this process is connected as a driver. Started once per module that asks (about 15 s)."""
    with loopback_cluster({"num_cpus": 1}, [{"num_cpus": 1}] * 2) as address:
        yield address
