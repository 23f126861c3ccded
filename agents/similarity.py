"""The Similarity Classifier (Bongard-RWR+, Sec. 4, App. C.8): a non-parametric baseline agent.

It embeds every context panel and the test input (images with an image
embedder, descriptions with MiniLM), takes per side the distance from the test
embedding to that side's panels aggregated by the largest (the paper), the mean
or the smallest, and answers the side whose aggregate is smaller. Distances are
euclidean (the paper) or cosine. It answers classify calls only, from their
metadata: the panels behind the images, or `extra["descriptions"]` for the
description forms, and `extra["test_panels"]`; the sides of test panels are
never read.

A call whose two test inputs belong to different sides (I2S, D2S: the call says
so with `extra["opposite_sides"]`) is decided jointly by default, as the paper's
public code does: the pair goes the way (first left and second right, or the
swap) whose two aggregates sum lower, so one test always lands on each side.
`independent`, or a call that does not say so, decides each test on its own.
Image features are compared as the embedder gives them or scaled to unit length;
the paper's code compares raw CLIP features.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from agents.call import CallSpec
from agents.image_embedders import Embeddings, ImageEmbedder, unit_rows
from agents.schema_fill import decisions_reply, side_decision
from datasets_io.errors import BongardError
from datasets_io.problem import SIDES, Panel, Side

Distance = Literal["euclidean", "cosine"]
Aggregate = Literal["max", "mean", "min"]
Assignment = Literal["joint", "independent"]
_AGGREGATES: dict[str, Callable[[np.ndarray[Any, Any]], Any]] = {
    "max": np.max,
    "mean": np.mean,
    "min": np.min,
}
Inputs = tuple[dict[Side, Embeddings], dict[str, Embeddings]]
"""Context embeddings by side, and each test input's embedding by its ref."""


class SimilarityError(BongardError, ValueError):
    """A call the similarity classifier cannot answer; the message says what it lacks."""


def side_scores(
    context: Mapping[Side, Embeddings], test: Embeddings, distance: Distance, aggregate: Aggregate
) -> dict[Side, float]:
    """Per side, the aggregate distance from the test embedding to its panels (cosine scales both to
    unit length itself, so it holds for raw features too)."""
    scores: dict[Side, float] = {}
    for side, panels in context.items():
        if distance == "euclidean":
            distances = np.linalg.norm(panels - test, axis=1)
        else:
            distances = 1.0 - unit_rows(panels) @ unit_rows(test[np.newaxis])[0]
        scores[side] = float(_AGGREGATES[aggregate](distances))
    return scores


def nearer_side(scores: Mapping[Side, float]) -> Side:
    """The side with the smaller aggregate distance; left on an exact tie."""
    return "left" if scores["left"] <= scores["right"] else "right"


def joint_sides(first: Mapping[Side, float], second: Mapping[Side, float]) -> tuple[Side, Side]:
    """The pair's sides, one test on each: first left and second right unless the swap's two aggregates
    sum lower (the straight way on an exact tie, as `nearer_side` prefers left)."""
    straight = first["left"] + second["right"]
    swapped = first["right"] + second["left"]
    return ("left", "right") if straight <= swapped else ("right", "left")


OPPOSITE_SIDES = "opposite_sides"
"""The `extra` key by which a call says its two test inputs belong to different sides."""


def joint(call: CallSpec, assignment: Assignment, tests: int) -> bool:
    """Whether to decide the call's tests jointly: a pair the call says is split, unless `independent`."""
    return assignment == "joint" and tests == 2 and bool(call.extra.get(OPPOSITE_SIDES))


def assign_sides(scores: Sequence[Mapping[Side, float]], jointly: bool) -> list[Side]:
    """A side per test input: jointly for a pair (one on each side), each on its own otherwise."""
    if jointly and len(scores) == 2:
        return list(joint_sides(*scores))
    return [nearer_side(found) for found in scores]


class _EmbeddingMemo:
    """Image embeddings by file (path, size, mtime), so a problem's panels are embedded once per run."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, int, int], Embeddings] = {}
        self._lock = threading.Lock()

    def embed(self, embedder: ImageEmbedder, paths: Sequence[Path]) -> Embeddings:
        """The embedder's own features (unscaled), so raw and unit-length runs share one memo."""
        keys = [(embedder.spec, str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths]
        with self._lock:
            missing = sorted(
                {(key, path) for key, path in zip(keys, paths, strict=True) if key not in self._rows}
            )
        if missing:
            rows = embedder.features([path for _, path in missing])
            with self._lock:
                self._rows.update({key: row for (key, _), row in zip(missing, rows, strict=True)})
        return np.stack([self._rows[key] for key in keys])


_memo = _EmbeddingMemo()


def _image_inputs(call: CallSpec, embedder: ImageEmbedder, normalise: bool) -> Inputs:
    panels: dict[str, Panel] = {panel.ref: panel for image in call.images for panel in image.panels}
    context = [panel for panel in panels.values() if panel.role == "context"]
    tests = list(call.extra.get("test_panels", []))
    missing = [ref for ref in tests if ref not in panels]
    if missing:
        raise SimilarityError(f"test panels {', '.join(missing)} are not among the call's images")
    by_side: dict[Side, Embeddings] = {}
    for side in SIDES:
        paths = [panel.path for panel in context if panel.side == side]
        if not paths:
            raise SimilarityError(f"the call shows no context panel of the {side} side")
        by_side[side] = _scaled(_memo.embed(embedder, paths), normalise)
    found = _scaled(_memo.embed(embedder, [panels[ref].path for ref in tests]), normalise)
    return by_side, dict(zip(tests, found, strict=True))


def _scaled(features: Embeddings, normalise: bool) -> Embeddings:
    return unit_rows(features) if normalise else features


def _description_inputs(
    descriptions: Mapping[str, Any],
) -> Inputs:
    from agents.embeddings import embed_texts

    tests: Mapping[str, str] = descriptions.get("tests", {})
    by_side = {side: list(descriptions.get(side, [])) for side in SIDES}
    if not all(by_side.values()) or not tests:
        raise SimilarityError("description calls need extra['descriptions'] with left, right and tests")
    vectors = embed_texts([*by_side["left"], *by_side["right"], *tests.values()])
    count = len(by_side["left"])
    rights = count + len(by_side["right"])
    split: dict[Side, Embeddings] = {"left": vectors[:count], "right": vectors[count:rights]}
    return split, dict(zip(tests, vectors[rights:], strict=True))


def classify(
    call: CallSpec,
    embedder: ImageEmbedder,
    distance: Distance,
    aggregate: Aggregate,
    assignment: Assignment,
    normalise: bool,
) -> list[dict[str, Any]]:
    """One decision per test input in `extra["test_panels"]` (or in the descriptions), with every
    name a reply schema may ask for; `normalise` scales image features to unit length (MiniLM's
    description embeddings are unit length as that model gives them)."""
    descriptions = call.extra.get("descriptions")
    context, tests = (
        _description_inputs(descriptions)
        if descriptions is not None
        else _image_inputs(call, embedder, normalise)
    )
    if not tests:
        raise SimilarityError("a classify call names no test input (extra['test_panels'])")
    scale = "unit-length" if normalise else "raw"
    what = "descriptions (MiniLM)" if descriptions is not None else f"{scale} images ({embedder.spec})"
    scores = [side_scores(context, test, distance, aggregate) for test in tests.values()]
    jointly = joint(call, assignment, len(scores))
    sides = assign_sides(scores, jointly)
    why = "jointly, one test on each side, by the lower sum over the pair" if jointly else "on its own"
    concept = "none: the similarity classifier compares embeddings and states no concept"
    decisions = []
    for found, side in zip(scores, sides, strict=True):
        explanation = (
            f"By embedding similarity of {what}: the {aggregate} {distance} distance to the left panels is "
            f"{found['left']:.4f} and to the right panels {found['right']:.4f}; decided {why}, so {side}."
        )
        decisions.append(side_decision(side, explanation, concept, explanation))
    return decisions


class SimilarityChatModel(BaseChatModel):
    """The Similarity Classifier as a LangChain chat model (it needs the call's `CallSpec`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    embedder: Any
    """An `ImageEmbedder`."""
    distance: Distance = "euclidean"
    aggregate: Aggregate = "max"
    assignment: Assignment = "joint"
    normalise: bool = False

    @property
    def _llm_type(self) -> str:
        return "similarity"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        call = kwargs.get("call")
        if not isinstance(call, CallSpec) or call.task != "classify":
            task = call.task if isinstance(call, CallSpec) else "bare chat"
            raise SimilarityError(
                f"the similarity classifier answers classify calls only (this one is {task!r}): "
                "it compares embeddings and cannot describe, reason or write"
            )
        found = classify(call, self.embedder, self.distance, self.aggregate, self.assignment, self.normalise)
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=decisions_reply(call, found)))]
        )
