"""Shared fixtures: the real Bongard data in `../shared/data`, used in place."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from datasets_io.problem import BongardProblem

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA_ENV = "BONGARD_SHARED_DATA"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder; its absence is a failure, not a skip."""
    path = Path(os.environ.get(SHARED_DATA_ENV) or REPO_ROOT.parent / "shared" / "data")
    assert (path / "bongard-classic").is_dir() and (path / "bongard-rwr").is_dir(), (
        f"real Bongard data not found at {path}; set {SHARED_DATA_ENV}"
    )
    return path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """An empty data directory for datasets a test builds."""
    return (tmp_path / "data").resolve()


@pytest.fixture
def root(data_dir: Path, request: pytest.FixtureRequest) -> Path:
    """The folder of the dataset under test, named by the test module's `FORMAT`."""
    return data_dir / str(request.module.FORMAT)


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
