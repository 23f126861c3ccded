"""Dataset variants built from a generated image pool (Bongard-RWR+, App. B and C.7).

- main / LP: Algorithm 2 per side over the accepted images, P context images and
  a test image per side, with or without removing the most redundant image
  after each round (Bongard-RWR+/LP turns removal off);
- TVT: the source images' renders split three ways: all but the last two
  context images of a side, with its test image, form the pool for contexts
  (and for training targets); renders of the second-to-last context image are
  the validation targets, of the last one the test targets;
- impure: each problem with one context image per side replaced by an image
  the review rejected for that side (Bongard-RWR+/LP-Impure).

Greyscale (Bongard-RWR+/GS) needs no manifest of its own: every run takes
`--variant grey`. Embeddings come in by image id, so this module needs no model.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from datasets_io.generation.diverse_subsets import (
    MEAN_SIMILARITY_LIMIT,
    SUBSETS_PER_SIDE,
    select_diverse_subsets,
)
from datasets_io.generation.generated import Matrix, Pool, PoolImage, build_matrices, matrix_id
from datasets_io.problem import SIDES, Side

Split = Literal["train", "validation", "test"]
SPLITS: tuple[Split, ...] = ("train", "validation", "test")
Embeddings = Mapping[int, np.ndarray[Any, Any]]


def side_subsets(
    images: Sequence[PoolImage], embeddings: Embeddings, size: int, count: int, remove: bool
) -> list[list[int]]:
    """Algorithm 2 over `images`: up to `count` subsets of `size` image ids, most diverse first."""
    if len(images) < size:
        return []
    ids = [image.image_id for image in images]
    selection = select_diverse_subsets(
        np.stack([embeddings[i] for i in ids]), size, count, remove, MEAN_SIMILARITY_LIMIT
    )
    return [[ids[k] for k in subset] for subset in selection.subsets]


def pool_matrices(
    pool: Pool,
    embeddings: Embeddings,
    panels: int,
    seed: int,
    count: int = SUBSETS_PER_SIDE,
    remove: bool = True,
) -> list[Matrix]:
    """The main dataset (P = 6, removal on) or an LP variant: per source, every side subset of
    P + 1 accepted images paired with every one of the other side."""
    matrices: list[Matrix] = []
    for concept in pool.concepts:
        left, right = (
            side_subsets(pool.of_side(concept.source, side), embeddings, panels + 1, count, remove)
            for side in SIDES
        )
        matrices += build_matrices(concept, left, right, seed)
    return matrices


def _split_roles(images: Sequence[PoolImage]) -> dict[str, list[PoolImage]]:
    """A side's accepted renders by the role their source image plays in TVT."""
    indices = sorted({i.source_index for i in images if i.source_role == "context"})
    role_of = dict(zip(indices[-2:], ("validation", "test"), strict=True)) if len(indices) >= 2 else {}
    roles: dict[str, list[PoolImage]] = {"shared": [], "validation": [], "test": []}
    for image in images:
        context = image.source_role == "context"
        roles[role_of.get(image.source_index, "shared") if context else "shared"].append(image)
    return roles


def _pick(rng: random.Random, images: Sequence[PoolImage], taken: set[int]) -> int | None:
    free = [image.image_id for image in images if image.image_id not in taken]
    return rng.choice(free) if free else None


def tvt_matrices(
    pool: Pool, embeddings: Embeddings, panels: int, seed: int, count: int = SUBSETS_PER_SIDE
) -> dict[Split, list[Matrix]]:
    """Train, validation and test problems over the same contexts, with test images from
    disjoint source images (App. B, Bongard-RWR+/TVT)."""
    splits: dict[Split, list[Matrix]] = {split: [] for split in SPLITS}
    for concept in pool.concepts:
        roles = {side: _split_roles(pool.of_side(concept.source, side)) for side in SIDES}
        contexts = {
            side: side_subsets(roles[side]["shared"], embeddings, panels, count, remove=True)
            for side in SIDES
        }
        number = 0
        for left in contexts["left"]:
            for right in contexts["right"]:
                for split in SPLITS:
                    rng = random.Random(f"{seed}:{concept.source}:{number}:{split}")
                    role = "shared" if split == "train" else split
                    left_test = _pick(rng, roles["left"][role], set(left))
                    right_test = _pick(rng, roles["right"][role], set(right))
                    if left_test is not None and right_test is not None:
                        splits[split].append(
                            Matrix(
                                id=matrix_id(concept.row, number),
                                source=concept.source,
                                left=[*left, left_test],
                                right=[*right, right_test],
                            )
                        )
                number += 1
    return splits


def rejected(pool: Pool, source: str, side: Side) -> list[PoolImage]:
    """Images rendered for a side that the review put elsewhere or nowhere."""
    return [i for i in pool.of_side(source, side, accepted_only=False) if i.decision not in (None, side)]


def impure_matrices(matrices: Sequence[Matrix], pool: Pool, seed: int) -> tuple[list[Matrix], int]:
    """Each problem with one context image per side swapped for a rejected one of that side;
    also how many problems had no rejected image to swap in (left out)."""
    impure: list[Matrix] = []
    skipped = 0
    for matrix in matrices:
        rng = random.Random(f"{seed}:impure:{matrix.id}")
        swapped: dict[str, list[int]] = {}
        for side in SIDES:
            candidates = rejected(pool, matrix.source, side)
            if not candidates:
                break
            ids = list(getattr(matrix, side))
            ids[rng.randrange(len(ids) - 1)] = rng.choice(
                candidates
            ).image_id  # a context image, not the test
            swapped[side] = ids
        if len(swapped) < len(SIDES):
            skipped += 1
            continue
        impure.append(matrix.model_copy(update=swapped))
    return impure, skipped
