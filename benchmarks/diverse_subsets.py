"""Algorithm 2's subset search: the exact clique search against the paper's enumeration of every subset.

Side by side in one run: on pools small enough to enumerate, both find the same
subsets and the ratio of their times is printed; on pools of the paper's size
(about 105 renders per side, subsets of 7) only the clique search can finish,
and its time per side is printed (M = 10 rounds, with and without removal).
Embeddings are seeded random vectors around a shared direction, as CLIP
embeddings of one concept's renders are. Run: python -m benchmarks.diverse_subsets
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from datasets_io.generation.diverse_subsets import cosine_matrix, most_diverse_subset, select_diverse_subsets


def enumerate_all(similarity: np.ndarray[Any, Any], size: int) -> tuple[int, ...]:
    """The paper's GetAllSubsets: every subset, the first with the smallest largest similarity."""
    best: tuple[float, tuple[int, ...]] | None = None
    for subset in itertools.combinations(range(len(similarity)), size):
        block = similarity[np.ix_(subset, subset)]
        largest = float(block[np.triu_indices(size, k=1)].max())
        if best is None or largest < best[0]:
            best = (largest, subset)
    assert best is not None
    return best[1]


def pool(count: int, seed: int, dimensions: int = 64) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(count, dimensions)) + 2.0 * rng.normal(size=(1, dimensions))


def timed(work: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = work()
    return result, time.perf_counter() - started


def main() -> None:
    print("one round, exact clique search vs enumerating every subset:")
    for count, size in ((16, 4), (20, 5), (22, 6), (24, 7)):
        similarity = cosine_matrix(pool(count, seed=count))
        found, clique_s = timed(partial(most_diverse_subset, similarity, range(count), size))
        enumerated, enumerate_s = timed(partial(enumerate_all, similarity, size))
        assert found == enumerated, (found, enumerated)
        print(
            f"  {count} images, subsets of {size} ({math.comb(count, size):,} subsets): same subset; "
            f"clique {clique_s * 1000:.1f} ms, enumeration {enumerate_s * 1000:.0f} ms "
            f"-> {enumerate_s / clique_s:.0f}x"
        )
    print("a side of the paper's size, M = 10 rounds (enumeration: C(105, 7) = 2.3e10 subsets per round):")
    for remove in (True, False):
        embeddings = pool(105, seed=1)
        selection, seconds = timed(partial(select_diverse_subsets, embeddings, 7, 10, remove))
        print(
            f"  removal {'on ' if remove else 'off'}: {len(selection.subsets)} subsets in {seconds:.2f} s "
            f"({selection.stop})"
        )


if __name__ == "__main__":
    main()
