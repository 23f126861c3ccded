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
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict, get_args

import numpy as np
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send, interrupt
from pydantic import BaseModel, Field

from agents.call import ImageSource
from agents.image_embedders import ImageEmbedder
from agents.image_generators import ImageGenerator
from datasets_io.diverse_subsets import MEAN_SIMILARITY_LIMIT, SUBSETS_PER_SIDE
from datasets_io.generated import Decision, PoolImage, SourceConcept
from datasets_io.problem import SIDES, BongardProblem, Panel, Side
from graphs.generation_tools import FAMILY, IMAGE_SIDE, VARIATIONS, ToolCallError, generation_tools
from graphs.nodes import SolveRuntime, call_agent, user_message
from graphs.rwr_plus_text import FAMILY as RWR_PLUS

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


class GenerationState(TypedDict, total=False):
    source: dict[str, Any]
    concept: dict[str, Any]
    settings: dict[str, Any]
    notes: Annotated[list[dict[str, Any]], operator.add]
    trace: Annotated[list[dict[str, Any]], operator.add]
    matrices: list[dict[str, Any]]
    images: list[dict[str, Any]]


@dataclass
class GenerationRuntime:
    """What the graph needs that is not state: agents by role, the generator, the embedder."""

    solve: SolveRuntime
    """Agents by role: describer, augmenter, and for the automatic review reviewer and review_judge."""
    generator: ImageGenerator
    embedder: ImageEmbedder

    def __post_init__(self) -> None:
        self.tools: dict[str, StructuredTool] = generation_tools(self.solve, self.generator, self.embedder)


class ReviewVerdict(BaseModel):
    explanation: str
    verdict: Decision


def _runtime(config: RunnableConfig) -> GenerationRuntime:
    runtime = config.get("configurable", {}).get("generation")
    if not isinstance(runtime, GenerationRuntime):
        raise TypeError(
            "the generation graph needs a GenerationRuntime under config['configurable']['generation']"
        )
    return runtime


def _settings(state: Mapping[str, Any]) -> GenerationSettings:
    return GenerationSettings.model_validate(state["settings"])


def _concept(state: Mapping[str, Any]) -> SourceConcept:
    return SourceConcept.model_validate(state["concept"])


def _side_concept(concept: SourceConcept, side: Side) -> str:
    return concept.left if side == "left" else concept.right


def image_id(row: int, side: Side, source_index: int, variant: int) -> int:
    """Unique within a dataset: the source's label row, the side, the source image, the variant."""
    return ((row * 2 + SIDES.index(side)) * 100 + source_index) * 100 + variant


def _notes(state: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [note for note in state.get("notes", []) if note["kind"] == kind]


def _with(state: Mapping[str, Any], **task: Any) -> dict[str, Any]:
    return {**state, "task": task}


@contextmanager
def _about(what: str) -> Iterator[None]:
    """A tool's complaint about a model's reply, told with the source image it was about."""
    try:
        yield
    except ToolCallError as error:
        raise ToolCallError(f"{what}: {error}") from None


# --- describe, augment, render -------------------------------------------------------------------------


def _describe_sends(state: GenerationState) -> list[Send]:
    problem = BongardProblem.model_validate(state["source"], context={"check_paths": False})
    return [
        Send("describe", _with(state, panel=panel.model_dump(mode="json"))) for panel in problem.all_panels
    ]


async def _describe(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    panel = Panel.model_validate(state["task"]["panel"])
    concept = _side_concept(_concept(state), panel.side)
    args = {"image_path": str(panel.path), "side": panel.side, "concept": concept}
    with _about(f"{_concept(state).source} {panel.side} image {panel.index}"):
        found = await _runtime(config).tools["describe_image"].ainvoke(args)
    note = {"kind": "prompts", "side": panel.side, "index": panel.index, "role": panel.role}
    return {
        "notes": [note | {"positive": found["positive"], "negative": found["negative"]}],
        "trace": [found["call"]],
    }


def _augment_sends(state: GenerationState) -> list[Send]:
    return [Send("augment", _with(state, prompts=note)) for note in _notes(state, "prompts")]


async def _augment(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    prompts = state["task"]["prompts"]
    concept = _side_concept(_concept(state), prompts["side"])
    args = {"positive": prompts["positive"], "concept": concept, "count": _settings(state).variations}
    with _about(f"{_concept(state).source} {prompts['side']} image {prompts['index']}"):
        found = await _runtime(config).tools["augment_prompt"].ainvoke(args)
    return {
        "notes": [{**prompts, "kind": "variants", "variants": found["prompts"]}],
        "trace": [found["call"]],
    }


def _render_sends(state: GenerationState) -> list[Send]:
    return [
        Send("render", _with(state, variant=number, prompt=text, source=note))
        for note in _notes(state, "variants")
        for number, text in enumerate(note["variants"], 1)
    ]


async def _render(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    task, settings, concept = state["task"], _settings(state), _concept(state)
    source = task["source"]
    identity = image_id(concept.row, source["side"], source["index"], task["variant"])
    relative = f"pool/{concept.source}/{source['side']}/{source['index']}-{task['variant']}.png"
    seed = settings.seed * 1_000_003 + identity
    args = {
        "positive": task["prompt"], "negative": source["negative"], "seed": seed,
        "out_path": str(Path(settings.folder) / relative), "size": settings.size,
    }  # fmt: skip
    await _runtime(config).tools["render_image"].ainvoke(args)
    image = PoolImage(
        image_id=identity, source=concept.source, side=source["side"], source_index=source["index"],
        source_role=source["role"], variant=task["variant"], path=relative, positive=task["prompt"],
        negative=source["negative"], seed=seed,
    )  # fmt: skip
    return {"notes": [{"kind": "image", **image.model_dump(mode="json")}]}


def _images(state: Mapping[str, Any]) -> list[PoolImage]:
    notes = _notes(state, "image")
    return sorted(
        (PoolImage.model_validate({k: v for k, v in n.items() if k != "kind"}) for n in notes),
        key=lambda i: i.image_id,
    )


# --- review -------------------------------------------------------------------------------------------


def review_request(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a human reviewer is asked about: every rendered image with the concept of its side."""
    concept = _concept(state)
    return [
        {
            "image_id": image.image_id,
            "source": image.source,
            "side": image.side,
            "path": image.path,
            "concept": _side_concept(concept, image.side),
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


async def _human_review(state: GenerationState) -> dict[str, Any]:
    request = review_request(state)
    answer = interrupt({"source": _concept(state).source, "images": request})
    decisions = checked_decisions(
        answer.get("decisions") if isinstance(answer, Mapping) else answer,
        {item["image_id"] for item in request},
    )
    return {
        "notes": [
            {"kind": "decision", "image_id": i, "decision": d, "reviewer": "human"}
            for i, d in decisions.items()
        ]
    }


def _auto_review_sends(state: GenerationState) -> list[Send]:
    return [
        Send("auto_review", _with(state, image=image.model_dump(mode="json"))) for image in _images(state)
    ]


async def _auto_review(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    """Re-describe the image without its concept, then judge which side's concept the description shows."""
    runtime, concept, settings = _runtime(config).solve, _concept(state), _settings(state)
    image = PoolImage.model_validate(state["task"]["image"])
    path = Path(settings.folder) / image.path
    shown = ImageSource(path=path, panels=[Panel(path=path, side=image.side, index=image.source_index)])
    described, first = await call_agent(
        runtime, "reviewer", [user_message(runtime.prompts.fill(RWR_PLUS, "describe_image"), [shown])],
        task="describe", images=[shown], conversation=f"review {image.image_id}", step=0,
    )  # fmt: skip
    text = runtime.prompts.fill(
        FAMILY, "review_judge", description=described.text, left=concept.left, right=concept.right
    )
    verdict, second = await call_agent(
        runtime, "review_judge", [user_message(text)], task="judge", images=[],
        conversation=f"review {image.image_id}", step=1, schema=ReviewVerdict,
        extra={"concepts": [concept.left, concept.right]},
    )  # fmt: skip
    decision = (verdict.parsed or {}).get("verdict", "none")  # an unreadable verdict rejects the image
    reviewer = (
        f"auto: {runtime.agent('reviewer').spec} described, {runtime.agent('review_judge').spec} judged"
    )
    note = {"kind": "decision", "image_id": image.image_id, "decision": decision, "reviewer": reviewer}
    return {"notes": [note], "trace": [first, second]}


def _reviewed_images(state: Mapping[str, Any]) -> list[PoolImage]:
    decisions = {n["image_id"]: n for n in _notes(state, "decision")}
    return [
        image.model_copy(update={"decision": decisions[i]["decision"], "reviewer": decisions[i]["reviewer"]})
        if (i := image.image_id) in decisions
        else image
        for image in _images(state)
    ]


# --- embed, select, build -----------------------------------------------------------------------------


def embeddings_file(folder: Path, embedder: str, source: str, side: Side) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder)
    return folder / EMBEDDINGS_FOLDER / safe / f"{source}-{side}.npz"


def _side_sends(node: str) -> Callable[[GenerationState], list[Send]]:
    def sends(state: GenerationState) -> list[Send]:
        return [Send(node, _with(state, side=side)) for side in SIDES]

    return sends


async def _embed(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    """The accepted images of one side, embedded and kept in a file beside the dataset."""
    runtime, settings, concept = _runtime(config), _settings(state), _concept(state)
    side: Side = state["task"]["side"]
    accepted = [image for image in _reviewed_images(state) if image.side == side and image.accepted]
    target = embeddings_file(Path(settings.folder), runtime.embedder.spec, concept.source, side)
    if accepted:
        paths = [str(Path(settings.folder) / image.path) for image in accepted]
        found = await runtime.tools["embed_images"].ainvoke({"paths": paths})
        target.parent.mkdir(parents=True, exist_ok=True)
        np.savez(target, ids=np.array([i.image_id for i in accepted]), vectors=np.array(found["embeddings"]))
    return {"notes": [{"kind": "embedded", "side": side, "file": str(target), "count": len(accepted)}]}


async def _select(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    settings, side = _settings(state), state["task"]["side"]
    [embedded] = [n for n in _notes(state, "embedded") if n["side"] == side]
    note: dict[str, Any] = {"kind": "subsets", "side": side, "subsets": [], "removed": []}
    if embedded["count"] < settings.panels + 1:
        note["stop"] = f"{embedded['count']} images accepted, {settings.panels + 1} needed per subset"
        return {"notes": [note]}
    with np.load(embedded["file"]) as saved:
        ids, vectors = saved["ids"].tolist(), saved["vectors"].tolist()
    args = {
        "embeddings": vectors, "size": settings.panels + 1, "count": settings.subsets,
        "remove": settings.remove, "mean_limit": settings.mean_limit,
    }  # fmt: skip
    found = await _runtime(config).tools["select_diverse_subsets"].ainvoke(args)
    note |= {
        "subsets": [[ids[k] for k in subset] for subset in found["subsets"]],
        "removed": [ids[k] for k in found["removed"]],
        "stop": found["stop"],
    }
    return {"notes": [note]}


async def _build(state: GenerationState, config: RunnableConfig) -> dict[str, Any]:
    concept, settings = _concept(state), _settings(state)
    subsets = {n["side"]: n["subsets"] for n in _notes(state, "subsets")}
    args = {
        "source": concept.source, "row": concept.row, "left_rule": concept.left, "right_rule": concept.right,
        "left_subsets": subsets["left"], "right_subsets": subsets["right"], "seed": settings.seed,
    }  # fmt: skip
    matrices = await _runtime(config).tools["build_matrices"].ainvoke(args)
    return {
        "matrices": matrices,
        "images": [image.model_dump(mode="json") for image in _reviewed_images(state)],
    }


async def _join(state: GenerationState) -> dict[str, Any]:
    """Where parallel branches meet before the next step."""
    return {}


def _after_render(state: GenerationState) -> list[Send] | str:
    return "review" if _settings(state).review == "human" else _auto_review_sends(state)


def generation_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The graph, uncompiled with a checkpointer (the driver adds one: the human review needs it)."""
    graph: StateGraph[GenerationState] = StateGraph(GenerationState)
    steps: list[tuple[str, Any]] = [
        ("describe", _describe), ("described", _join), ("augment", _augment), ("augmented", _join),
        ("render", _render), ("rendered", _join), ("review", _human_review), ("auto_review", _auto_review),
        ("reviewed", _join), ("embed", _embed), ("embedded", _join), ("select", _select), ("build", _build),
    ]  # fmt: skip
    for name, node in steps:
        graph.add_node(name, node)
    graph.add_conditional_edges(START, _describe_sends, ["describe"])
    graph.add_edge("describe", "described")
    graph.add_conditional_edges("described", _augment_sends, ["augment"])
    graph.add_edge("augment", "augmented")
    graph.add_conditional_edges("augmented", _render_sends, ["render"])
    graph.add_edge("render", "rendered")
    graph.add_conditional_edges("rendered", _after_render, ["review", "auto_review"])
    graph.add_edge("review", "reviewed")
    graph.add_edge("auto_review", "reviewed")
    graph.add_conditional_edges("reviewed", _side_sends("embed"), ["embed"])
    graph.add_edge("embed", "embedded")
    graph.add_conditional_edges("embedded", _side_sends("select"), ["select"])
    graph.add_edge("select", "build")
    graph.add_edge("build", END)
    return graph.compile()


def start_state(
    problem: BongardProblem, concept: SourceConcept, settings: GenerationSettings
) -> GenerationState:
    return {
        "source": problem.model_dump(mode="json"),
        "concept": concept.model_dump(mode="json"),
        "settings": settings.model_dump(mode="json"),
        "notes": [],
        "trace": [],
    }
