"""Variants of a generated dataset, written as extra manifests beside its `dataset.json`.

Embeddings of the pool's accepted images are read from the files the
generation left under `embeddings/<embedder>/` (or made and kept there), so a
variant costs no rendering and, with the same embedder, no embedding either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.image_embedders import ImageEmbedder
from datasets_io.generation.generated import MANIFEST_FILE, Matrix, Pool, read_manifest, write_manifest
from datasets_io.generation.variants import impure_matrices, pool_matrices, tvt_matrices
from datasets_io.problem import SIDES
from graphs.generation.graph import embeddings_file


def pool_embeddings(folder: Path, pool: Pool, embedder: ImageEmbedder) -> dict[int, np.ndarray[Any, Any]]:
    """Every accepted image's embedding by id, from the kept files where they cover the images."""
    found: dict[int, np.ndarray[Any, Any]] = {}
    for concept in pool.concepts:
        for side in SIDES:
            images = pool.of_side(concept.source, side)
            if not images:
                continue
            ids = [image.image_id for image in images]
            target = embeddings_file(folder, embedder.spec, concept.source, side)
            if target.is_file():
                with np.load(target) as saved:
                    if saved["ids"].tolist() == ids:
                        found.update(zip(ids, saved["vectors"], strict=True))
                        continue
            vectors = embedder.embed_images([folder / image.path for image in images])
            target.parent.mkdir(parents=True, exist_ok=True)
            np.savez(target, ids=np.array(ids), vectors=vectors)
            found.update(zip(ids, vectors, strict=True))
    return found


@dataclass
class VariantReport:
    written: dict[str, int] = field(default_factory=dict)
    """Manifest file -> problems in it."""
    notes: list[str] = field(default_factory=list)


def _manifest(folder: Path, name: str, matrices: Sequence[Matrix], pool: Pool, report: VariantReport) -> None:
    write_manifest(folder, name, matrices, pool.images)
    report.written[name] = len(matrices)


def write_variants(
    folder: Path,
    embedder: ImageEmbedder,
    panels: Sequence[int] = (),
    remove: bool = False,
    tvt: int | None = None,
    impure: bool = False,
    seed: int = 0,
    subsets: int = 10,
) -> VariantReport:
    """`l{P}.json` (no removal, the paper's LP) or `p{P}.json` (with removal) for each P,
    `train.json` / `validation.json` / `test.json` with `tvt` = P, and with `impure` an
    `-impure` twin of `dataset.json` and of every manifest written here."""
    pool = Pool.read(folder)
    embeddings = pool_embeddings(folder, pool, embedder)
    report = VariantReport()
    for count in panels:
        name = f"{'p' if remove else 'l'}{count}.json"
        _manifest(folder, name, pool_matrices(pool, embeddings, count, seed, subsets, remove), pool, report)
    if tvt is not None:
        for split, matrices in tvt_matrices(pool, embeddings, tvt, seed, subsets).items():
            _manifest(folder, f"{split}.json", matrices, pool, report)
    if impure:
        bases = (
            [MANIFEST_FILE, *report.written] if (folder / MANIFEST_FILE).is_file() else list(report.written)
        )
        for base in bases:
            swapped, skipped = impure_matrices(read_manifest(folder, base), pool, seed)
            if swapped:
                _manifest(folder, base.replace(".json", "-impure.json"), swapped, pool, report)
            if skipped:
                report.notes.append(
                    f"{base}: {skipped} problems left out of the impure variant (no rejected image)"
                )
    return report
