"""Algorithm 2 of Bongard-RWR+ on constructed embeddings whose answers are known."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from datasets_io.generation.diverse_subsets import (
    cosine_matrix,
    mean_similarity,
    most_diverse_subset,
    most_redundant,
    select_diverse_subsets,
)


def on_circle(count: int) -> np.ndarray:
    """`count` unit vectors at equal angles: the most diverse subsets are known in closed form."""
    angles = [2 * math.pi * n / count for n in range(count)]
    return np.array([[math.cos(a), math.sin(a)] for a in angles])


def brute_force(
    similarity: np.ndarray, pool: list[int], size: int, excluded: set[tuple[int, ...]]
) -> tuple[int, ...]:
    """The paper's enumeration: every subset in order, the first with the smallest largest similarity."""
    scored = [
        (max(similarity[i, j] for i, j in itertools.combinations(subset, 2)), subset)
        for subset in itertools.combinations(sorted(pool), size)
        if subset not in excluded
    ]
    return min(scored, key=lambda pair: pair[0])[1]


def test_the_most_diverse_subset_of_points_on_a_circle_is_every_other_point() -> None:
    selection = select_diverse_subsets(on_circle(8), size=4, count=2, remove=False)
    assert selection.subsets == [(0, 2, 4, 6), (1, 3, 5, 7)]  # ties go to index order; never twice
    assert selection.removed == [] and selection.stop == "2 subsets chosen"


@pytest.mark.parametrize("seed", range(12))
def test_the_exact_search_finds_what_enumerating_every_subset_finds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    count, size = int(rng.integers(7, 13)), int(rng.integers(2, 5))
    similarity = cosine_matrix(rng.normal(size=(count, 6)) + rng.normal(size=(1, 6)))
    pool, excluded = list(range(count)), set[tuple[int, ...]]()
    for _ in range(4):
        found = most_diverse_subset(similarity, pool, size, excluded)
        assert found == brute_force(similarity, pool, size, excluded)
        excluded.add(found)


def test_removal_takes_the_most_redundant_image_out_of_later_subsets() -> None:
    rng = np.random.default_rng(5)
    embeddings = rng.normal(size=(14, 5)) + 1.5 * rng.normal(size=(1, 5))
    similarity = cosine_matrix(embeddings)
    selection = select_diverse_subsets(embeddings, size=3, count=5, mean_limit=1.01)
    assert len(selection.subsets) == 5 and len(selection.removed) == 5
    pool = list(range(14))
    for subset, removed in zip(selection.subsets, selection.removed, strict=True):
        assert subset == brute_force(similarity, pool, 3, set())
        block = similarity[np.ix_(subset, subset)]
        means = [(block[i].sum() - 1) / 2 for i in range(3)]
        assert removed == subset[int(np.argmax(means))] == most_redundant(similarity, subset)
        pool.remove(removed)
    for later, removed in enumerate(selection.removed):
        assert all(removed not in subset for subset in selection.subsets[later + 1 :])


def test_the_rounds_stop_when_fewer_than_p_images_are_left() -> None:
    selection = select_diverse_subsets(np.eye(4), size=3, count=10)
    assert len(selection.subsets) == 2 and len(selection.removed) == 2
    assert selection.stop == "fewer than 3 images left in the pool"


def test_the_rounds_stop_when_the_pool_grows_too_similar() -> None:
    distinct = [0.0, 1.0, 0.0]
    alike = [[1.0, 0.0, 0.01 * n] for n in range(4)]
    embeddings = np.array([distinct, *alike])
    assert mean_similarity(cosine_matrix(embeddings), list(range(5))) < 0.85
    selection = select_diverse_subsets(embeddings, size=2, count=10)
    assert selection.subsets == [(0, 1)] and selection.removed == [0]  # a tie: the first goes
    assert selection.stop.startswith("the pool's mean similarity 1.000 reached 0.85")


def test_without_removal_subsets_differ_but_may_share_images() -> None:
    rng = np.random.default_rng(2)
    selection = select_diverse_subsets(rng.normal(size=(9, 4)), size=3, count=10, remove=False)
    assert len(set(selection.subsets)) == len(selection.subsets) == 10
    shared = set(selection.subsets[0]) & set().union(*selection.subsets[1:])
    assert shared, "greedy selection without removal reuses images"


def test_a_pool_smaller_than_a_subset_gives_none() -> None:
    selection = select_diverse_subsets(np.eye(3), size=4)
    assert selection.subsets == [] and "no further subset of 4 in a pool of 3" in selection.stop
