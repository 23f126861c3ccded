"""`similarity`: the Similarity Classifier baseline of Bongard-RWR+ (no language model, no key).

The model part of the spec names the image embedder: `similarity` alone is
`similarity:classical` (weight-free features, runs anywhere); the paper's
configuration is `similarity:open_clip` (CLIP ViT-L/14, extra `clip`).
Descriptions are embedded with MiniLM (extra `metrics`).

Unset, `normalise` follows the paper per embedder: its code measures raw CLIP
features, so `open_clip` is compared raw; `classical` is scaled to unit length,
the form every other user of that embedder gets, and its raw rows all have
about the same length, so either way gives the same decisions.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from agents.image_embedders import resolve_image_embedder
from agents.provider import AgentParams, Provider
from agents.similarity import Aggregate, Assignment, Distance, SimilarityChatModel

RAW_BY_DEFAULT = frozenset({"open_clip"})
"""Embedders whose features the paper's code compares unscaled."""


class SimilarityParams(AgentParams):
    distance: Distance = Field(
        default="euclidean", description="how far two embeddings are (the paper: euclidean)"
    )
    aggregate: Aggregate = Field(
        default="max", description="how a side's distances to the test input combine (the paper: max)"
    )
    assignment: Assignment = Field(
        default="joint",
        description="two test inputs (I2S, D2S): joint puts one on each side by the lower summed "
        "aggregate, as the paper's code; independent decides each on its own",
    )
    normalise: bool | None = Field(
        default=None,
        description="scale image embeddings to unit length before measuring distances (unset: the "
        "paper's per embedder, raw for open_clip, unit length for classical)",
    )

    def own_settings(self) -> dict[str, Any]:
        """The assignment rule is always in the cache key: replies cached before the joint rule
        became the default were made by the independent one and must not answer for it."""
        return {**super().own_settings(), "assignment": self.assignment}


def build(model: str, params: SimilarityParams) -> BaseChatModel:
    name = model.partition(":")[0]
    normalise = params.normalise if params.normalise is not None else name not in RAW_BY_DEFAULT
    return SimilarityChatModel(
        embedder=resolve_image_embedder(model),
        distance=params.distance,
        aggregate=params.aggregate,
        assignment=params.assignment,
        normalise=normalise,
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
