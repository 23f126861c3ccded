"""`similarity`: the Similarity Classifier baseline of Bongard-RWR+ (no language model, no key).

The model part of the spec names the image embedder: `similarity` alone is
`similarity:classical` (weight-free features, runs anywhere); the paper's
configuration is `similarity:open_clip` (CLIP ViT-L/14, extra `clip`).
Descriptions are embedded with MiniLM (extra `metrics`). Parameters:
`-M distance=euclidean|cosine` (default euclidean) and `-M aggregate=max|mean|min`
(default max, the paper's).
"""

from __future__ import annotations

from typing import get_args

from langchain_core.language_models import BaseChatModel

from agents.image_embedders import resolve_image_embedder
from agents.provider import AgentParams, Provider
from agents.similarity import Aggregate, Distance, SimilarityChatModel


def build(model: str, params: AgentParams) -> BaseChatModel:
    distance, aggregate = params.extra("distance", "euclidean"), params.extra("aggregate", "max")
    if distance not in get_args(Distance):
        raise ValueError(f"distance takes {' or '.join(get_args(Distance))}, not {distance!r}")
    if aggregate not in get_args(Aggregate):
        raise ValueError(f"aggregate takes {', '.join(get_args(Aggregate))}, not {aggregate!r}")
    return SimilarityChatModel(embedder=resolve_image_embedder(model), distance=distance, aggregate=aggregate)


PROVIDER = Provider(
    name="similarity",
    summary="the Similarity Classifier baseline of Bongard-RWR+: nearest side by embeddings, no model or key",
    build=build,
    requires=("skimage",),
    reads_call_metadata=True,
    deterministic=True,
    default_model="classical",
)
