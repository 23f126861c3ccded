"""Real Ray clusters for the tests, on this machine's loopback, this process connected as a driver."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch to keep every address on the loopback ("0"); otherwise it rewrites 127.0.0.1 to the
host's address, where a loopback-bound head does not answer. Ray reads it once, when it is first
imported: set later, a driver dials the host's address and waits on its GCS for good."""


@contextmanager
def loopback_cluster(head: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    """A head (`head`: its resources) and one node per entry of `nodes`, each its own raylet, every
    address on 127.0.0.1; yields the cluster's address. Each xdist worker keeps its Ray sessions in
    a folder of its own (`RAY_TMPDIR`), so two workers' clusters never share `session_latest`."""
    assert os.environ.get(LOOPBACK_ONLY) == "0", (
        f"tests/conftest.py sets {LOOPBACK_ONLY} before Ray is imported"
    )
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    with pytest.MonkeyPatch.context() as patch:
        if worker := os.environ.get("PYTEST_XDIST_WORKER"):
            patch.setenv("RAY_TMPDIR", str(Path(tempfile.gettempdir()) / f"bongard-ray-{worker}"))
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"node_ip_address": "127.0.0.1", "include_dashboard": False, **head},
        )
        for node in nodes:
            cluster.add_node(node_ip_address="127.0.0.1", **node)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
        try:
            yield cluster.address
        finally:
            ray.shutdown()
            cluster.shutdown()  # type: ignore[no-untyped-call]
