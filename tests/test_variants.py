"""Dataset variants on a constructed image pool whose roles and reviews are known."""

from __future__ import annotations

import numpy as np

from datasets_io.generation.generated import Decision, Matrix, Pool, PoolImage, SourceConcept
from datasets_io.generation.variants import impure_matrices, pool_matrices, rejected, tvt_matrices
from datasets_io.problem import SIDES, Side

CONTEXT_IMAGES = 5  # source images 0-4 per side, and the side's test image (index 5)
VARIANTS = 3


def image(side: Side, index: int, variant: int, decision: Decision | None = None) -> PoolImage:
    identity = (SIDES.index(side) * 100 + index) * 100 + variant
    return PoolImage(
        image_id=identity,
        source="7",
        side=side,
        source_index=index,
        source_role="test" if index == CONTEXT_IMAGES else "context",
        variant=variant,
        path=f"p/{identity}.png",
        positive="p",
        negative="n",
        seed=0,
        decision=decision or side,
    )


def pool() -> Pool:
    """Every render accepted, but variant 3 of each side's image 0, which the review rejected."""
    images = [
        image(side, index, variant, "none" if (index, variant) == (0, 3) else None)
        for side in SIDES
        for index in range(CONTEXT_IMAGES + 1)
        for variant in range(1, VARIANTS + 1)
    ]
    return Pool(concepts=[SourceConcept(source="7", row=6, left="Big", right="Small")], images=images)


def embeddings(found: Pool) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(3)
    return {i.image_id: rng.normal(size=8) for i in found.images}


def by_id(found: Pool) -> dict[int, PoolImage]:
    return {i.image_id: i for i in found.images}


def test_p_panel_problems_pair_every_left_subset_with_every_right_one() -> None:
    found = pool()
    matrices = pool_matrices(found, embeddings(found), panels=2, seed=0, count=3)
    assert len(matrices) == 9 and [m.id for m in matrices] == [n * 1000 + 7 for n in range(9)]
    images = by_id(found)
    for matrix in matrices:
        assert len(matrix.left) == len(matrix.right) == 3
        assert all(images[i].side == "left" and images[i].accepted for i in matrix.left)
        assert all(images[i].side == "right" and images[i].accepted for i in matrix.right)


def test_without_removal_images_are_reused_more() -> None:
    """Algorithm 2 with removal drops each round's most redundant image from the pool, so later
    subsets reach further: on this pool 10 distinct left images against 7 without (measured; equal
    counts would mean `remove` went unheeded)."""
    found = pool()
    vectors = embeddings(found)
    kept = pool_matrices(found, vectors, panels=3, seed=0, count=4, remove=False)
    removed = pool_matrices(found, vectors, panels=3, seed=0, count=4, remove=True)

    def distinct(matrices: list[Matrix]) -> int:
        return len({i for m in matrices for i in m.left})

    assert (distinct(kept), distinct(removed)) == (7, 10)


def test_tvt_splits_draw_their_test_images_from_disjoint_source_images() -> None:
    found = pool()
    splits = tvt_matrices(found, embeddings(found), panels=2, seed=1, count=2)
    images = by_id(found)
    assert {split: len(matrices) for split, matrices in splits.items()} == {
        "train": 4,
        "validation": 4,
        "test": 4,
    }
    for split, matrices in splits.items():
        for matrix in matrices:
            for ids in (matrix.left, matrix.right):
                context, test = [images[i] for i in ids[:-1]], images[ids[-1]]
                assert all(i.source_index in (0, 1, 2, CONTEXT_IMAGES) for i in context)  # the shared pool
                expected = {"train": {0, 1, 2, CONTEXT_IMAGES}, "validation": {3}, "test": {4}}[split]
                assert test.source_index in expected and test.image_id not in ids[:-1]
    contexts = {
        split: [(tuple(m.left[:-1]), tuple(m.right[:-1])) for m in ms] for split, ms in splits.items()
    }
    assert contexts["train"] == contexts["validation"] == contexts["test"]  # the same contexts, other targets


def test_impure_problems_swap_one_context_image_per_side_for_a_rejected_one() -> None:
    found = pool()
    matrices = pool_matrices(found, embeddings(found), panels=2, seed=0, count=2)
    impure, skipped = impure_matrices(matrices, found, seed=4)
    assert skipped == 0 and len(impure) == len(matrices)
    bad = {i.image_id for side in SIDES for i in rejected(found, "7", side)}
    assert len(bad) == 2
    for clean, swapped in zip(matrices, impure, strict=True):
        for before, after in ((clean.left, swapped.left), (clean.right, swapped.right)):
            assert after[-1] == before[-1]  # the test image stays
            changed = [k for k, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
            assert len(changed) == 1 and after[changed[0]] in bad
    accepted_only = Pool(concepts=found.concepts, images=[i for i in found.images if i.accepted])
    assert impure_matrices(matrices, accepted_only, seed=4) == ([], len(matrices))


def test_removal_is_the_default_as_in_algorithm_2() -> None:
    found = pool()
    vectors = embeddings(found)
    assert pool_matrices(found, vectors, panels=3, seed=0, count=4) == pool_matrices(
        found, vectors, panels=3, seed=0, count=4, remove=True
    )


def test_every_variant_is_the_same_for_the_same_seed_and_numbers_its_problems_in_order() -> None:
    """A dataset variant is reproduced from its seed alone: each draw is seeded by the problem."""
    found = pool()
    vectors = embeddings(found)
    splits = tvt_matrices(found, vectors, panels=2, seed=1, count=2)
    assert splits == tvt_matrices(found, vectors, panels=2, seed=1, count=2)
    assert [m.id for m in splits["train"]] == [n * 1000 + 7 for n in range(4)]  # one per context pair
    matrices = pool_matrices(found, vectors, panels=2, seed=0, count=2)
    assert impure_matrices(matrices, found, seed=4) == impure_matrices(matrices, found, seed=4)
