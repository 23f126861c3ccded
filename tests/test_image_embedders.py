"""Image embedders: the open_clip one with random weights (none can be downloaded here), and the registry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.image_embedders import (
    EmbedderError,
    OpenClipEmbedder,
    image_embedder_names,
    resolve_image_embedder,
    unit_rows,
)

RWR_31 = ("bongard-rwr", "31", "left")


def test_open_clip_vit_l14_embeds_real_panels_with_random_weights(shared_data: Path) -> None:
    embedder = resolve_image_embedder("open_clip:ViT-L-14/none")
    assert isinstance(embedder, OpenClipEmbedder) and embedder.spec == "open_clip:ViT-L-14/none"
    paths = [shared_data.joinpath(*RWR_31, f"{n}.jpg") for n in range(2)]
    first = embedder.embed_images(paths)
    assert first.shape == (2, 768) and first.dtype == np.float32  # ViT-L/14's embedding width
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.allclose(first, embedder.embed_images(paths), atol=1e-5)  # one model per process, in eval mode
    assert not np.allclose(first[0], first[1])
    raw = embedder.features(paths)  # the tower's output as it comes, what the paper's classifier compares
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-3)
    assert np.allclose(unit_rows(raw), first, atol=1e-5)


def test_the_default_open_clip_is_vit_l14_with_openai_weights() -> None:
    embedder = resolve_image_embedder("open_clip")
    assert isinstance(embedder, OpenClipEmbedder)
    assert (embedder.model, embedder.pretrained) == ("ViT-L-14", "openai")


def test_unknown_embedders_and_unloadable_weights_are_named() -> None:
    assert {"classical", "open_clip"} <= set(image_embedder_names())
    with pytest.raises(EmbedderError, match=r"unknown image embedder 'clip'.*classical, open_clip"):
        resolve_image_embedder("clip")
    with pytest.raises(EmbedderError, match="could not load ViT-L-14 with pretrained='no-such-weights'"):
        resolve_image_embedder("open_clip:ViT-L-14/no-such-weights").embed_images([Path("unused.png")])
