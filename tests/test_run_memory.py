"""A run's memory does not grow with its dataset: it keeps a summary of each problem, not the problem.

Bongard-RWR+ has 5,400 problems; a run over it held every scanned problem (about 9 KB each here,
panels and paths) for its whole length. It now keeps what it needs to select, sample and list
distractors, and loads each problem when its item starts.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from pathlib import Path

from graphs.runs.runner import RunConfig, Runner, start_run
from results.store import STORE_FILE, ResultsStore
from tests.repeated_classic import repeated_classic

SUMMARY_BYTES = 2_000
"""At most this much held per problem (a summary measures about 500 bytes, a problem about 9 KB)."""


def held_by_a_runner(data: Path, home: Path) -> int:
    """Bytes a run's runner keeps allocated once it has read its dataset and planned its items."""
    store = ResultsStore(home / STORE_FILE)
    config = RunConfig(strategy="descriptive", dataset=f"folder:{data}", agents={"reasoner": "perception"})
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        runner = Runner(config, store, home)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(runner.problems) == len(list(data.iterdir()))
    return held


def test_a_runner_holds_a_small_summary_per_problem(tmp_path: Path, shared_data: Path) -> None:
    classic = (shared_data / "bongard-classic").resolve()
    small, large = (repeated_classic(classic, size, tmp_path / f"data-{size}") for size in (50, 400))
    held_by_a_runner(small, tmp_path / "warm-up")  # imports and caches filled once, outside the figures
    per_problem = (
        held_by_a_runner(large, tmp_path / "large") - held_by_a_runner(small, tmp_path / "small")
    ) / 350
    assert per_problem < SUMMARY_BYTES, f"{per_problem:.0f} bytes held per problem"


def test_a_run_keeps_what_it_made_before_out_of_the_collectors_passes(
    tmp_path: Path, shared_data: Path
) -> None:
    """The heap made before a run (modules, agents, summaries) lives as long as the run: each full
    garbage-collector pass walked all of it, about a tenth of a run's CPU. It is frozen while the
    run goes and given back to the collector after."""
    config = RunConfig(
        strategy="images-to-sides",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        agents={"reasoner": "perception"},
        problems=["1", "2"],
        dataset_options={"holdout_test": "true"},
    )
    run_id, runner = start_run(config, ResultsStore(tmp_path / STORE_FILE), tmp_path)
    frozen: list[int] = []
    asyncio.run(runner.run(run_id, on_item=lambda outcome: frozen.append(gc.get_freeze_count())))
    assert len(frozen) == 2 and min(frozen) > 10_000  # objects kept out of the passes during the run
    assert gc.get_freeze_count() == 0
