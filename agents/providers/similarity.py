"""`similarity`: the Similarity Classifier baseline of Bongard-RWR+ (no language model, no key).

The model part of the spec names the image embedder: `similarity` alone is
`similarity:classical` (weight-free features, runs anywhere); the paper's
configuration is `similarity:open_clip` (CLIP ViT-L/14, extra `clip`).
Descriptions are embedded with MiniLM (extra `metrics`).
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from agents.image_embedders import resolve_image_embedder
from agents.provider import AgentParams, Provider
from agents.similarity import Aggregate, Distance, SimilarityChatModel


class SimilarityParams(AgentParams):
    distance: Distance = Field(
        default="euclidean", description="how far two embeddings are (the paper: euclidean)"
    )
    aggregate: Aggregate = Field(
        default="max", description="how a side's distances to the test input combine (the paper: max)"
    )


def build(model: str, params: SimilarityParams) -> BaseChatModel:
    return SimilarityChatModel(
        embedder=resolve_image_embedder(model), distance=params.distance, aggregate=params.aggregate
    )


PROVIDER = Provider(
    name="similarity",
    summary="the Similarity Classifier baseline of Bongard-RWR+: nearest side by embeddings, no model or key",
    build=build,
    params=SimilarityParams,
    requires=("skimage",),
    reads_call_metadata=True,
    deterministic=True,
    default_model="classical",
)
