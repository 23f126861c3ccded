"""Diverse panel subsets from a pool of image embeddings: Bongard-RWR+'s Algorithm 2 (App. B).

Each round takes the P-subset of the pool whose largest pairwise cosine
similarity is the smallest (the most diverse side), never the same subset
twice. With removal on, the subset's most redundant image (the highest mean
similarity to the others in it) then leaves the pool, and the rounds stop once
fewer than P images remain or the pool's mean pairwise similarity reaches the
limit (0.85). M = 10 rounds give ten sides.

The paper enumerates every P-subset, which is out of reach for a pool of a
hundred images (C(105, 7) is about 2 * 10^10). The same subset is found
exactly here: the smallest threshold t for which the images pairwise at most t
similar contain a P-clique, by binary search over the pool's similarities and
a branch-and-bound clique search with a greedy colouring bound. Ties go to the
subset that comes first in index order, as the paper's enumeration would.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SUBSETS_PER_SIDE = 10
MEAN_SIMILARITY_LIMIT = 0.85

Matrix = np.ndarray[Any, np.dtype[np.float64]]


@dataclass(frozen=True)
class SubsetSelection:
    subsets: list[tuple[int, ...]]
    """Indices into the embeddings, each subset in increasing order, in the order chosen."""
    removed: list[int] = field(default_factory=list)
    """The image removed from the pool after each round (removal on)."""
    stop: str = ""
    """Why the rounds ended: all M done, too few images left, or the pool grew too similar."""


def cosine_matrix(embeddings: np.ndarray[Any, Any]) -> Matrix:
    vectors = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1, norms)
    return np.asarray(unit @ unit.T)


def _bits(indices: Iterable[Any]) -> int:
    return sum(1 << int(i) for i in indices)


def _colour_bound(candidates: int, adjacency: list[int]) -> int:
    """An upper bound on the largest clique among `candidates`: the colours of a greedy colouring."""
    colours = 0
    left = candidates
    while left:
        colours += 1
        free = left
        while free:
            vertex = (free & -free).bit_length() - 1
            left &= ~(1 << vertex)
            free &= ~(1 << vertex) & ~adjacency[vertex]
    return colours


def first_clique(adjacency: list[int], size: int, excluded: set[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The first clique of `size` vertices in index order that is not `excluded`, or None."""

    def extend(chosen: tuple[int, ...], candidates: int) -> tuple[int, ...] | None:
        need = size - len(chosen)
        if need == 0:
            return None if chosen in excluded else chosen
        while candidates and candidates.bit_count() >= need:
            if _colour_bound(candidates, adjacency) < need:
                return None
            vertex = (candidates & -candidates).bit_length() - 1
            candidates &= ~(1 << vertex)
            found = extend((*chosen, vertex), candidates & adjacency[vertex])
            if found is not None:
                return found
        return None

    return extend((), _bits(range(len(adjacency))))


def most_diverse_subset(
    similarity: Matrix, pool: Sequence[int], size: int, excluded: Collection[tuple[int, ...]] = ()
) -> tuple[int, ...] | None:
    """The `size`-subset (`size` >= 2) of `pool` with the smallest largest pairwise similarity,
    not one of `excluded`; None when there is none."""
    ordered = sorted(pool)
    if len(ordered) < size:
        return None
    local = similarity[np.ix_(ordered, ordered)]
    position = {index: n for n, index in enumerate(ordered)}
    local_excluded = {
        tuple(position[i] for i in subset) for subset in excluded if set(subset) <= position.keys()
    }
    upper = np.triu_indices(len(ordered), k=1)
    thresholds = np.unique(local[upper])

    def clique_at(threshold: float) -> tuple[int, ...] | None:
        allowed = local <= threshold
        adjacency = [_bits(np.flatnonzero(row)) & ~(1 << n) for n, row in enumerate(allowed)]
        return first_clique(adjacency, size, local_excluded)

    low, high = 0, len(thresholds) - 1
    best = clique_at(float(thresholds[high]))
    if best is None:
        return None
    while low < high:  # the smallest threshold that still admits a subset
        middle = (low + high) // 2
        found = clique_at(float(thresholds[middle]))
        if found is None:
            low = middle + 1
        else:
            best, high = found, middle
    return tuple(ordered[n] for n in best)


def most_redundant(similarity: Matrix, subset: Sequence[int]) -> int:
    """The member with the highest mean similarity to the other members (the first on a tie)."""
    block = similarity[np.ix_(subset, subset)]
    means = (block.sum(axis=1) - np.diag(block)) / (len(subset) - 1)
    return int(subset[int(np.argmax(means))])


def mean_similarity(similarity: Matrix, pool: Sequence[int]) -> float:
    block = similarity[np.ix_(pool, pool)]
    count = len(pool) * (len(pool) - 1)
    return float((block.sum() - np.trace(block)) / count) if count else 1.0


def select_diverse_subsets(
    embeddings: np.ndarray[Any, Any],
    size: int,
    count: int = SUBSETS_PER_SIDE,
    remove: bool = True,
    mean_limit: float = MEAN_SIMILARITY_LIMIT,
) -> SubsetSelection:
    """Algorithm 2 for one side's pool: up to `count` subsets of `size` images."""
    if size < 2:
        raise ValueError(f"subsets need at least 2 images, not {size}")
    similarity = cosine_matrix(embeddings)
    pool = list(range(len(similarity)))
    subsets: list[tuple[int, ...]] = []
    removed: list[int] = []
    while len(subsets) < count:
        subset = most_diverse_subset(similarity, pool, size, set(subsets))
        if subset is None:
            return SubsetSelection(subsets, removed, f"no further subset of {size} in a pool of {len(pool)}")
        subsets.append(subset)
        if not remove:
            continue
        redundant = most_redundant(similarity, subset)
        pool.remove(redundant)
        removed.append(redundant)
        if len(pool) < size:
            return SubsetSelection(subsets, removed, f"fewer than {size} images left in the pool")
        mean = mean_similarity(similarity, pool)
        if mean >= mean_limit:
            return SubsetSelection(
                subsets, removed, f"the pool's mean similarity {mean:.3f} reached {mean_limit}"
            )
    return SubsetSelection(subsets, removed, f"{count} subsets chosen")
