"""The Bongard-RWR+ generation pipeline as one LangGraph graph per source problem (Sec. 3.1, App. B).

describe (each source image, its side's concept -> prompt pair) -> augment (N
variants of each positive prompt) -> render (every variant) -> review -> embed
(the images accepted for each side) -> select (Algorithm 2 per side) -> build
(left subsets x right subsets). Every step is one of the generation tools.

Review is human by default: the graph stops at a LangGraph interrupt carrying
the images to review, its state is checkpointed, and it resumes with the
reviewer's decisions (left, right or none per image, App. E.2). With
`review="auto"` a reviewer agent re-describes each image and a judge agent
decides which side's concept the description shows: the cycle-consistency check
the paper proposes (App. D), marked as automatic in every decision it makes.

A source's constants (its problem and concept, the settings, the agents, the
generator, the embedder) are the graph's runtime context (`SourceItem`); the
state holds only what the steps produce, one named key per kind of result.
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypedDict, cast, get_args

import numpy as np
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send, interrupt
from pydantic import BaseModel, Field

from agents.call import ImageSource
from agents.image_embedders import ImageEmbedder
from agents.image_generators import ImageGenerator
from agents.prompt_library import prompt_family
from datasets_io.generation.diverse_subsets import MEAN_SIMILARITY_LIMIT, SUBSETS_PER_SIDE
from datasets_io.generation.generated import Decision, PoolImage, SourceConcept
from datasets_io.problem import SIDES, BongardProblem, Panel, PanelRole, Side
from graphs.answer import CallTrace
from graphs.generation.tools import (
    FAMILY,
    IMAGE_SIDE,
    VARIATIONS,
    GenerationTools,
    ToolCallError,
    generation_tools,
)
from graphs.nodes import Conversation, Item, SolveRuntime, ask, recording_calls

RWR_PLUS = prompt_family("rwr_plus", "graphs")
ReviewMode = Literal["human", "auto"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)
EMBEDDINGS_FOLDER = "embeddings"


class GenerationSettings(BaseModel):
    """What a generation run makes, the same for every source problem."""

    folder: str
    """The dataset folder being written (images go under `pool/`)."""
    variations: int = Field(default=VARIATIONS, ge=1, le=99)
    panels: int = Field(default=6, ge=1)
    """Context images per side (P); each side subset holds P + 1 images, the last the test image."""
    subsets: int = Field(default=SUBSETS_PER_SIDE, ge=1)
    remove: bool = True
    mean_limit: float = MEAN_SIMILARITY_LIMIT
    seed: int = 0
    size: int = IMAGE_SIDE
    review: ReviewMode = "human"


@dataclass
class GenerationRuntime:
    """What every source of a run shares: agents by role, the generator, the embedder, the tools."""

    solve: SolveRuntime
    """Agents by role: describer, augmenter, and for the automatic review reviewer and review_judge."""
    generator: ImageGenerator
    embedder: ImageEmbedder
    tools: GenerationTools = field(init=False)

    def __post_init__(self) -> None:
        self.tools = generation_tools(self.solve, self.generator, self.embedder)


@dataclass(frozen=True)
class SourceItem:
    """One source problem's runtime context: constant for its whole thread, never checkpointed."""

    problem: BongardProblem
    concept: SourceConcept
    settings: GenerationSettings
    run: GenerationRuntime

    @property
    def folder(self) -> Path:
        return Path(self.settings.folder)

    def side_concept(self, side: Side) -> str:
        return self.concept.left if side == "left" else self.concept.right

    def as_item(self) -> Item[None]:
        """The source problem as the item of the model-call helpers (`ask`, `Conversation`)."""
        return Item(self.problem, None, self.run.solve)

    def about(self, side: Side, index: int) -> str:
        return f"{self.concept.source} {side} image {index}"


Ctx = Runtime[SourceItem]


class SourcePrompts(TypedDict):
    """The describer's prompt pair for one source image."""

    side: Side
    index: int
    role: PanelRole
    positive: str
    negative: str


class SourceVariants(SourcePrompts):
    variants: list[str]
    """The augmenter's positive prompts, rendered as variants 1, 2, ..."""


class VariantTask(TypedDict):
    number: int
    prompt: str
    of: SourceVariants


class ImageRecord(TypedDict):
    """A rendered image as a `PoolImage` in JSON; its decision and reviewer are set after review."""

    image_id: int
    source: str
    side: Side
    source_index: int
    source_role: PanelRole
    variant: int
    path: str
    positive: str
    negative: str
    seed: int
    decision: Decision | None
    reviewer: str | None


class ReviewDecision(TypedDict):
    image_id: int
    decision: Decision
    reviewer: str


class EmbeddedSide(TypedDict):
    """Where a side's accepted images were embedded to, and how many there are."""

    side: Side
    file: str
    count: int


class SideSubsets(TypedDict):
    """Algorithm 2 on one side: the chosen subsets of image ids, those removed, why it stopped."""

    side: Side
    subsets: list[list[int]]
    removed: list[int]
    stop: str


class BuiltMatrix(TypedDict):
    """A problem as the build_matrices tool gives it: image ids per side, the test image last."""

    id: int
    source: str
    left: list[int]
    right: list[int]
    concept: dict[str, str]


class ReviewItem(TypedDict):
    """What a human reviewer is asked about one image (the interrupt's payload)."""

    image_id: int
    source: str
    side: Side
    path: str
    concept: str


class GenerationState(TypedDict, total=False):
    prompts: Annotated[list[SourcePrompts], operator.add]
    variants: Annotated[list[SourceVariants], operator.add]
    rendered: Annotated[list[ImageRecord], operator.add]
    decisions: Annotated[list[ReviewDecision], operator.add]
    embedded: Annotated[list[EmbeddedSide], operator.add]
    subsets: Annotated[list[SideSubsets], operator.add]
    trace: Annotated[list[CallTrace], operator.add]
    """The describe, augment and automatic review calls, in the order their branches finished."""
    matrices: list[BuiltMatrix]
    images: list[ImageRecord]
    """Every rendered image with its review decision: the thread's result, with `matrices`."""
    panel: str
    """A describe branch's source panel ref."""
    source_prompts: SourcePrompts
    """An augment branch's prompt pair."""
    variant: VariantTask
    """A render branch's variant."""
    image: ImageRecord
    """An automatic review branch's image."""
    side: Side
    """An embed or select branch's side."""


def image_id(row: int, side: Side, source_index: int, variant: int) -> int:
    """Unique within a dataset: the source's label row, the side, the source image, the variant."""
    return ((row * 2 + SIDES.index(side)) * 100 + source_index) * 100 + variant


@contextmanager
def _about(what: str) -> Iterator[None]:
    """A tool's complaint about a model's reply, told with the source image it was about."""
    try:
        yield
    except ToolCallError as error:
        raise ToolCallError(f"{what}: {error}") from None


# --- describe, augment, render -------------------------------------------------------------------------


def _describe_sends(state: GenerationState, runtime: Ctx) -> list[Send]:
    return [Send("describe", {"panel": panel.ref}) for panel in runtime.context.problem.all_panels]


async def _describe(state: GenerationState, runtime: Ctx) -> GenerationState:
    item = runtime.context
    panel = next(p for p in item.problem.all_panels if p.ref == state["panel"])
    args = {"image_path": str(panel.path), "side": panel.side, "concept": item.side_concept(panel.side)}
    with _about(item.about(panel.side, panel.index)):
        found = await item.run.tools.describe_image.ainvoke(args)
    prompts: SourcePrompts = {
        "side": panel.side,
        "index": panel.index,
        "role": panel.role,
        "positive": found["positive"],
        "negative": found["negative"],
    }
    return {"prompts": [prompts], "trace": [CallTrace.model_validate(found["call"])]}


def _augment_sends(state: GenerationState) -> list[Send]:
    return [Send("augment", {"source_prompts": prompts}) for prompts in state.get("prompts", [])]


async def _augment(state: GenerationState, runtime: Ctx) -> GenerationState:
    item, prompts = runtime.context, state["source_prompts"]
    args = {
        "positive": prompts["positive"],
        "concept": item.side_concept(prompts["side"]),
        "count": item.settings.variations,
    }
    with _about(item.about(prompts["side"], prompts["index"])):
        found = await item.run.tools.augment_prompt.ainvoke(args)
    variants: SourceVariants = {**prompts, "variants": found["prompts"]}
    return {"variants": [variants], "trace": [CallTrace.model_validate(found["call"])]}


def _render_sends(state: GenerationState) -> list[Send]:
    return [
        Send("render", {"variant": {"number": number, "prompt": text, "of": source}})
        for source in state.get("variants", [])
        for number, text in enumerate(source["variants"], 1)
    ]


async def _render(state: GenerationState, runtime: Ctx) -> GenerationState:
    item, task = runtime.context, state["variant"]
    source, settings, concept = task["of"], item.settings, item.concept
    identity = image_id(concept.row, source["side"], source["index"], task["number"])
    relative = f"pool/{concept.source}/{source['side']}/{source['index']}-{task['number']}.png"
    seed = settings.seed * 1_000_003 + identity
    args = {
        "positive": task["prompt"],
        "negative": source["negative"],
        "seed": seed,
        "out_path": str(item.folder / relative),
        "size": settings.size,
    }
    await item.run.tools.render_image.ainvoke(args)
    image = PoolImage(
        image_id=identity,
        source=concept.source,
        side=source["side"],
        source_index=source["index"],
        source_role=source["role"],
        variant=task["number"],
        path=relative,
        positive=task["prompt"],
        negative=source["negative"],
        seed=seed,
    )
    return {"rendered": [_record(image)]}


def _record(image: PoolImage) -> ImageRecord:
    return cast(ImageRecord, image.model_dump(mode="json"))


def _images(state: GenerationState) -> list[PoolImage]:
    return sorted(
        (PoolImage.model_validate(record) for record in state.get("rendered", [])), key=lambda i: i.image_id
    )


# --- review -------------------------------------------------------------------------------------------


def _review_request(state: GenerationState, item: SourceItem) -> list[ReviewItem]:
    """What a human reviewer is asked about: every rendered image with the concept of its side."""
    return [
        {
            "image_id": image.image_id,
            "source": image.source,
            "side": image.side,
            "path": image.path,
            "concept": item.side_concept(image.side),
        }
        for image in _images(state)
    ]


def resume_with(decisions: Mapping[int, str]) -> dict[str, Any]:
    """The value a reviewer's decisions resume the interrupted graph with (`Command(resume=...)`)."""
    return {"decisions": {str(image): decision for image, decision in decisions.items()}}


def checked_decisions(answer: Any, expected: set[int]) -> dict[int, Decision]:
    """A reviewer's answer to the interrupt: a decision for every image it asked about."""
    if not isinstance(answer, Mapping):
        raise ValueError(
            f"review decisions must map image ids to left, right or none, not {type(answer).__name__}"
        )
    decisions = {int(key): value for key, value in answer.items()}
    missing = sorted(expected - set(decisions))
    wrong = {key: value for key, value in decisions.items() if value not in DECISIONS}
    if missing or wrong or set(decisions) - expected:
        raise ValueError(
            f"review decisions: missing for images {missing}, not left/right/none: {wrong}, "
            f"unknown images: {sorted(set(decisions) - expected)}"
        )
    return decisions


async def _human_review(state: GenerationState, runtime: Ctx) -> GenerationState:
    request = _review_request(state, runtime.context)
    answer = interrupt({"source": runtime.context.concept.source, "images": request})
    decisions = checked_decisions(
        answer.get("decisions") if isinstance(answer, Mapping) else answer,
        {item["image_id"] for item in request},
    )
    return {"decisions": [{"image_id": i, "decision": d, "reviewer": "human"} for i, d in decisions.items()]}


class ReviewVerdict(BaseModel):
    explanation: str
    verdict: Decision


async def _auto_review(state: GenerationState, runtime: Ctx) -> GenerationState:
    """Re-describe the image without its concept, then judge which side's concept the description shows."""
    source, image = runtime.context, PoolImage.model_validate(state["image"])
    item, concept, conversation = source.as_item(), source.concept, f"review {image.image_id}"
    path = source.folder / image.path
    shown = ImageSource(path=path, panels=[Panel(path=path, side=image.side, index=image.source_index)])
    with recording_calls() as calls:
        described = await ask(
            item,
            "reviewer",
            item.prompts.fill(RWR_PLUS, "describe_image"),
            [shown],
            task="describe",
            conversation=conversation,
        )
        text = item.prompts.fill(
            FAMILY, "review_judge", description=described.text, left=concept.left, right=concept.right
        )
        # the review's second step, in a context of its own: the judge reads the description only
        verdict = await Conversation(item, "review_judge", conversation, turns=1).ask(
            text, task="judge", schema=ReviewVerdict, extra={"concepts": [concept.left, concept.right]}
        )
    decision: Decision = (verdict.parsed or {}).get("verdict", "none")  # an unreadable verdict rejects it
    reviewer = (
        f"auto: {item.run.agent('reviewer').spec} described, {item.run.agent('review_judge').spec} judged"
    )
    return {
        "decisions": [{"image_id": image.image_id, "decision": decision, "reviewer": reviewer}],
        "trace": calls,
    }


def _reviewed_images(state: GenerationState) -> list[PoolImage]:
    decisions = {d["image_id"]: d for d in state.get("decisions", [])}
    return [
        image.model_copy(update={"decision": decisions[i]["decision"], "reviewer": decisions[i]["reviewer"]})
        if (i := image.image_id) in decisions
        else image
        for image in _images(state)
    ]


def _after_render(state: GenerationState, runtime: Ctx) -> list[Send] | str:
    if runtime.context.settings.review == "human":
        return "review"
    return [Send("auto_review", {"image": _record(image)}) for image in _images(state)]


# --- embed, select, build -----------------------------------------------------------------------------


def embeddings_file(folder: Path, embedder: str, source: str, side: Side) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder)
    return folder / EMBEDDINGS_FOLDER / safe / f"{source}-{side}.npz"


def _each_side(node: str) -> Callable[[GenerationState], list[Send]]:
    def sends(state: GenerationState) -> list[Send]:
        return [Send(node, {**state, "side": side}) for side in SIDES]

    return sends


async def _embed(state: GenerationState, runtime: Ctx) -> GenerationState:
    """The accepted images of one side, embedded and kept in a file beside the dataset."""
    item, side = runtime.context, state["side"]
    accepted = [image for image in _reviewed_images(state) if image.side == side and image.accepted]
    target = embeddings_file(item.folder, item.run.embedder.spec, item.concept.source, side)
    if accepted:
        paths = [str(item.folder / image.path) for image in accepted]
        found = await item.run.tools.embed_images.ainvoke({"paths": paths})
        target.parent.mkdir(parents=True, exist_ok=True)
        np.savez(target, ids=np.array([i.image_id for i in accepted]), vectors=np.array(found["embeddings"]))
    return {"embedded": [{"side": side, "file": str(target), "count": len(accepted)}]}


async def _select(state: GenerationState, runtime: Ctx) -> GenerationState:
    settings, side = runtime.context.settings, state["side"]
    [embedded] = [e for e in state.get("embedded", []) if e["side"] == side]
    if embedded["count"] < settings.panels + 1:
        stop = f"{embedded['count']} images accepted, {settings.panels + 1} needed per subset"
        return {"subsets": [{"side": side, "subsets": [], "removed": [], "stop": stop}]}
    with np.load(embedded["file"]) as saved:
        ids, vectors = saved["ids"].tolist(), saved["vectors"].tolist()
    args = {
        "embeddings": vectors,
        "size": settings.panels + 1,
        "count": settings.subsets,
        "remove": settings.remove,
        "mean_limit": settings.mean_limit,
    }
    found = await runtime.context.run.tools.select_diverse_subsets.ainvoke(args)
    chosen: SideSubsets = {
        "side": side,
        "subsets": [[ids[k] for k in subset] for subset in found["subsets"]],
        "removed": [ids[k] for k in found["removed"]],
        "stop": found["stop"],
    }
    return {"subsets": [chosen]}


async def _build(state: GenerationState, runtime: Ctx) -> GenerationState:
    item = runtime.context
    concept, subsets = item.concept, {s["side"]: s["subsets"] for s in state.get("subsets", [])}
    args = {
        "source": concept.source,
        "row": concept.row,
        "left_rule": concept.left,
        "right_rule": concept.right,
        "left_subsets": subsets["left"],
        "right_subsets": subsets["right"],
        "seed": item.settings.seed,
    }
    matrices = await item.run.tools.build_matrices.ainvoke(args)
    return {"matrices": matrices, "images": [_record(image) for image in _reviewed_images(state)]}


async def _join(state: GenerationState) -> GenerationState:
    """Where parallel branches meet before the next step."""
    return {}


Generation = CompiledStateGraph[GenerationState, SourceItem, GenerationState, GenerationState]


class Step(Protocol):
    """A node of the graph (what LangGraph calls with the state and the runtime)."""

    def __call__(self, state: GenerationState, runtime: Ctx) -> Awaitable[GenerationState]: ...


JOINS = ("described", "augmented", "rendered", "reviewed", "embedded")


def generation_graph() -> Generation:
    """The graph, compiled without a checkpointer (the driver adds one: the human review needs it)."""
    graph: StateGraph[GenerationState, SourceItem, GenerationState, GenerationState] = StateGraph(
        GenerationState, context_schema=SourceItem
    )
    for name in JOINS:
        graph.add_node(name, _join)
    stages: list[tuple[str, Callable[..., list[Send] | str], dict[str, Step], str]] = [
        # after this, fanned out (or routed) by this, to these steps, which meet here
        (START, _describe_sends, {"describe": _describe}, "described"),
        ("described", _augment_sends, {"augment": _augment}, "augmented"),
        ("augmented", _render_sends, {"render": _render}, "rendered"),
        ("rendered", _after_render, {"review": _human_review, "auto_review": _auto_review}, "reviewed"),
        ("reviewed", _each_side("embed"), {"embed": _embed}, "embedded"),
        ("embedded", _each_side("select"), {"select": _select}, "build"),
    ]
    for before, route, steps, after in stages:
        for name, step in steps.items():
            graph.add_node(name, step)
            graph.add_edge(name, after)
        graph.add_conditional_edges(before, route, list(steps))
    graph.add_node("build", _build)
    graph.add_edge("build", END)
    return graph.compile()
