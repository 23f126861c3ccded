"""Image embedders behind one small interface: the paper's CLIP ViT-L/14 and a weight-free one.

Bongard-RWR+ embeds images with CLIP ViT-L/14 to pick diverse panel subsets
(App. B, Alg. 2) and in its Similarity Classifier (Sec. 4). `open_clip:MODEL[/PRETRAINED]`
is that embedder (extra `clip`; ViT-L-14 with OpenAI's weights by default,
`/none` for random weights when none can be downloaded). `classical` is a
deterministic, weight-free embedder of hand-made features (colour histogram,
gradient histogram, thumbnail) for machines with neither weights nor a GPU; it
is named for what it is and is no stand-in for CLIP's semantics.

An embedder gives two views of an image: `features`, the embedder's own vector
at its own scale (the Bongard-RWR+ Similarity Classifier measures Euclidean
distances between raw CLIP features), and `embed_images`, the same scaled to
unit length, so a dot product is a cosine similarity (what subset selection and
the generation tools use).

Embedders arrive through the entry-point group `bongard_agents.image_embedders`,
built-ins as others: each entry point names a function from the spec's model part
(after `NAME:`, possibly empty) to an `ImageEmbedder`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image

from datasets_io.errors import BongardError, did_you_mean
from datasets_io.images import open_image
from datasets_io.plugins import Registry, UnknownName

Embeddings = np.ndarray[Any, np.dtype[np.float32]]
ENTRY_POINT_GROUP = "bongard_agents.image_embedders"
DEFAULT_CLIP = "ViT-L-14"
DEFAULT_PRETRAINED = "openai"
THUMBNAIL = 16
GRADIENT_SIDE = 64
_model_lock = threading.Lock()
"""One forward pass at a time through a process's shared open_clip model."""


class EmbedderError(BongardError, ValueError):
    """An unknown or unusable embedder spec; the message says which and what to install."""


class ImageEmbedder(Protocol):
    spec: str

    def features(self, paths: Sequence[Path]) -> Embeddings:
        """One row per image, in order, at the embedder's own scale (no rescaling)."""
        ...

    def embed_images(self, paths: Sequence[Path]) -> Embeddings:
        """One unit-length row per image, in order."""
        ...


def unit_rows(vectors: np.ndarray[Any, Any]) -> Embeddings:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.where(norms == 0, 1, norms), dtype=np.float32)


class ClassicalEmbedder:
    """Colour (HSV histogram), shape (a histogram of oriented gradients) and layout (a thumbnail)."""

    spec = "classical"

    def features(self, paths: Sequence[Path]) -> Embeddings:
        """The three blocks side by side, each unit length: every row is about sqrt(3) long, so scaling
        rows to unit length changes no distance's order (only a block of zeros, as a blank image's
        gradients, makes a row shorter)."""
        return self._rows(paths).astype(np.float32)

    def embed_images(self, paths: Sequence[Path]) -> Embeddings:
        return unit_rows(self._rows(paths))

    def _rows(self, paths: Sequence[Path]) -> np.ndarray[Any, np.dtype[np.float64]]:
        return np.stack([self._features(open_image(path)) for path in paths])

    @staticmethod
    def _features(image: Image.Image) -> np.ndarray[Any, np.dtype[np.float64]]:
        from skimage.feature import hog

        hsv = np.asarray(image.convert("HSV"), dtype=np.int64)
        bins = (hsv[..., 0] * 8 // 256) * 16 + (hsv[..., 1] * 4 // 256) * 4 + hsv[..., 2] * 4 // 256
        colour = np.bincount(bins.ravel(), minlength=128).astype(np.float64)
        grey = np.asarray(image.convert("L").resize((GRADIENT_SIDE, GRADIENT_SIDE)), dtype=np.float64) / 255
        gradients = hog(grey, orientations=9, pixels_per_cell=(16, 16), cells_per_block=(2, 2))
        thumbnail = np.asarray(image.convert("L").resize((THUMBNAIL, THUMBNAIL)), dtype=np.float64) / 255
        parts = [colour / colour.sum(), gradients, thumbnail.ravel() - thumbnail.mean()]
        return np.concatenate([part / (np.linalg.norm(part) or 1.0) for part in parts])


class OpenClipEmbedder:
    """An open_clip model's image tower, loaded once per process on first use (CPU or GPU)."""

    def __init__(self, model: str, pretrained: str | None, device: str | None = None) -> None:
        self.model, self.pretrained, self.device = model, pretrained, device
        self.spec = f"open_clip:{model}/{pretrained or 'none'}"

    def features(self, paths: Sequence[Path]) -> Embeddings:
        """The image tower's output as it comes, the features Bongard-RWR+'s Similarity Classifier uses."""
        import torch

        model, preprocess, device = _open_clip_model(self.model, self.pretrained, self.device)
        batch = torch.stack([preprocess(open_image(path)) for path in paths]).to(device)
        with _model_lock, torch.no_grad():
            found: Embeddings = model.encode_image(batch).float().cpu().numpy()
        return found

    def embed_images(self, paths: Sequence[Path]) -> Embeddings:
        return unit_rows(self.features(paths))


@cache
def _open_clip_model(model: str, pretrained: str | None, device: str | None) -> tuple[Any, Any, str]:
    try:
        import open_clip
        import torch
    except ImportError as missing:
        raise EmbedderError(
            f"the open_clip embedder needs the `clip` extra ({missing.name} is not installed): "
            "pip install 'bongard-agents[clip]'"
        ) from None
    chosen = device or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        network, _, preprocess = open_clip.create_model_and_transforms(
            model, pretrained=pretrained, device=chosen
        )
    except (RuntimeError, OSError, ValueError) as error:
        raise EmbedderError(
            f"open_clip could not load {model} with pretrained={pretrained!r}: {error} "
            "(weights are downloaded on first use; offline, use pretrained 'none' or the classical embedder)"
        ) from None
    network.eval()
    return network, preprocess, chosen


def open_clip_embedder(model: str) -> ImageEmbedder:
    """`MODEL/PRETRAINED`, either part defaulting to the paper's ViT-L-14 with OpenAI's weights."""
    name, _, pretrained = (model or DEFAULT_CLIP).partition("/")
    weights = pretrained or DEFAULT_PRETRAINED
    return OpenClipEmbedder(name, None if weights == "none" else weights)


def classical_embedder(model: str) -> ImageEmbedder:
    """The one weight-free embedder; it has no model to choose."""
    return ClassicalEmbedder()


EmbedderFactory = Callable[[str], ImageEmbedder]
EMBEDDERS: Registry[EmbedderFactory] = Registry(ENTRY_POINT_GROUP, "image embedder")


def image_embedder_names() -> list[str]:
    return sorted(EMBEDDERS.names())


def resolve_image_embedder(spec: str) -> ImageEmbedder:
    """`classical`, `open_clip` (ViT-L-14, OpenAI weights), `open_clip:MODEL/PRETRAINED`, or a plugin's."""
    name, _, model = spec.partition(":")
    try:
        factory = EMBEDDERS.get(name)
    except UnknownName:
        names = image_embedder_names()
        raise EmbedderError(
            f"unknown image embedder {spec!r}{did_you_mean(name, names)}; embedders: {', '.join(names)}"
        ) from None
    return factory(model)
