"""The Bongard-RWR+ generation pipeline's steps as LangChain tools (Sec. 3.1, App. B Alg. 1-2, App. F).

Each tool works alone (`await tool.ainvoke({...})`), inside the `generation`
graph, or bound to a tool-calling agent. describe_image, augment_prompt and
render_image call models; embed_images calls an image embedder;
select_diverse_subsets and build_matrices are plain algorithms. Model calls are
made through the toolkit's managed agents, so retries, limits, the cache and
the call trace come with them; a tool that calls a model returns its trace
(a `CallTrace` as JSON) under `call`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field, StringConstraints, create_model

from agents.call import AgentReply, ImageSource, TaskKind
from agents.image_embedders import ImageEmbedder
from agents.image_generators import ImageGenerator
from agents.prompt_library import prompt_family
from datasets_io.generation.diverse_subsets import (
    MEAN_SIMILARITY_LIMIT,
    SUBSETS_PER_SIDE,
    select_diverse_subsets,
)
from datasets_io.generation.generated import SourceConcept, build_matrices
from datasets_io.problem import Panel, Side
from datasets_io.render import save_png
from graphs.nodes import RunOnly, SolveRuntime, ask, recording_calls

FAMILY = prompt_family("generation", "graphs")
VARIATIONS = 15
IMAGE_SIDE = 512


PROMPT_CHARS = 300
"""A drawing prompt is one phrase; the bound also keeps constrained decoding from running on."""
Prompt = Annotated[str, StringConstraints(max_length=PROMPT_CHARS)]


class PromptPair(BaseModel):
    positive: Prompt
    negative: Prompt


@cache
def augmentations(count: int) -> type[BaseModel]:
    """The augment reply's schema: exactly `count` prompts."""
    prompts = (list[Prompt], Field(min_length=count, max_length=count))
    return create_model("Augmentations", prompts=prompts)


class ToolCallError(RuntimeError):
    """A model's reply a tool cannot use (an unparsable or short reply); the message says which."""


async def _one_call(
    runtime: SolveRuntime,
    role: str,
    text: str,
    images: list[ImageSource],
    *,
    task: TaskKind,
    conversation: str,
    schema: type[BaseModel],
    extra: dict[str, Any],
) -> tuple[AgentReply, dict[str, Any]]:
    """One model call in a context of its own, and its trace as JSON (what the tool returns)."""
    with recording_calls() as calls:
        reply = await ask(
            RunOnly(runtime),
            role,
            text,
            images,
            task=task,
            conversation=conversation,
            schema=schema,
            extra=extra,
        )
    return reply, calls[0].model_dump(mode="json")


def describe_image_tool(runtime: SolveRuntime, role: str = "describer") -> StructuredTool:
    async def describe_image(image_path: str, side: Side, concept: str) -> dict[str, Any]:
        """An image and its side's concept -> a positive and a negative prompt for re-rendering it."""
        image = ImageSource(path=Path(image_path), panels=[Panel(path=Path(image_path), side=side, index=0)])
        text = runtime.prompts.fill(FAMILY, "describe_prompts", concept=concept)
        reply, trace = await _one_call(
            runtime,
            role,
            text,
            [image],
            task="describe",
            conversation=f"describe {Path(image_path).name}",
            schema=PromptPair,
            extra={"concept": concept},
        )
        if reply.parsed is None:
            raise ToolCallError(f"describe_image: {reply.agent} gave no prompt pair: {reply.parse_error}")
        return {**reply.parsed, "call": trace}

    return StructuredTool.from_function(coroutine=describe_image, name="describe_image")


def augment_prompt_tool(runtime: SolveRuntime, role: str = "augmenter") -> StructuredTool:
    async def augment_prompt(positive: str, concept: str, count: int = VARIATIONS) -> dict[str, Any]:
        """A positive prompt and its concept -> `count` distinct prompts that keep the concept."""
        text = runtime.prompts.fill(FAMILY, "augment_prompt", prompt=positive, concept=concept, count=count)
        reply, trace = await _one_call(
            runtime,
            role,
            text,
            [],
            task="generate",
            conversation="augment",
            schema=augmentations(count),
            extra={"count": count, "concept": concept},
        )
        prompts = list(dict.fromkeys(p.strip() for p in (reply.parsed or {}).get("prompts", []) if p.strip()))
        if not prompts:
            raise ToolCallError(
                f"augment_prompt: {reply.agent} gave no prompts: {reply.parse_error or reply.text!r}"
            )
        return {"prompts": prompts[:count], "call": trace}

    return StructuredTool.from_function(coroutine=augment_prompt, name="augment_prompt")


def render_image_tool(runtime: SolveRuntime, generator: ImageGenerator) -> StructuredTool:
    async def render_image(
        positive: str, negative: str, seed: int, out_path: str, size: int = IMAGE_SIDE
    ) -> dict[str, Any]:
        """A positive and a negative prompt -> an image file (written once; an existing file is kept)."""
        path = Path(out_path)
        if not path.is_file():
            prompt = runtime.prompts.fill(FAMILY, "render", positive=positive.rstrip("."))
            image = await generator.generate(prompt, negative, seed=seed, size=size)
            save_png(image, path)
        return {"path": str(path), "generator": generator.spec}

    return StructuredTool.from_function(coroutine=render_image, name="render_image")


def embed_images_tool(embedder: ImageEmbedder) -> StructuredTool:
    def embed_images(paths: list[str]) -> dict[str, Any]:
        """Image files -> unit-length embeddings, one per image, in order."""
        vectors = embedder.embed_images([Path(p) for p in paths])
        return {"embedder": embedder.spec, "embeddings": vectors.tolist()}

    return StructuredTool.from_function(func=embed_images, name="embed_images")


def _select(
    embeddings: list[list[float]],
    size: int,
    count: int = SUBSETS_PER_SIDE,
    remove: bool = True,
    mean_limit: float = MEAN_SIMILARITY_LIMIT,
) -> dict[str, Any]:
    """Bongard-RWR+ Algorithm 2: the most diverse subsets of `size` images, by index."""
    import numpy as np

    selection = select_diverse_subsets(np.array(embeddings), size, count, remove, mean_limit)
    return {
        "subsets": [list(s) for s in selection.subsets],
        "removed": selection.removed,
        "stop": selection.stop,
    }


class MatrixArgs(BaseModel):
    source: str
    row: int = Field(ge=0, description="The source's row in labels.csv; ids are number * 1000 + row + 1")
    left_rule: str
    right_rule: str
    left_subsets: list[list[int]]
    right_subsets: list[list[int]]
    seed: int = 0


def _build(
    source: str,
    row: int,
    left_rule: str,
    right_rule: str,
    left_subsets: list[list[int]],
    right_subsets: list[list[int]],
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Left subsets x right subsets of image ids -> problems with ids and their concept, the test
    image of each side last."""
    concept = SourceConcept(source=source, row=row, left=left_rule, right=right_rule)
    stated = {"left": left_rule, "right": right_rule}
    return [
        m.model_dump() | {"concept": stated}
        for m in build_matrices(concept, left_subsets, right_subsets, seed)
    ]


select_diverse_subsets_tool = StructuredTool.from_function(func=_select, name="select_diverse_subsets")
build_matrices_tool = StructuredTool.from_function(func=_build, name="build_matrices", args_schema=MatrixArgs)


@dataclass(frozen=True)
class GenerationTools:
    """The six tools, by name as attributes, so a node that calls one is checked by the type checker
    (a misspelt tool is an error before it runs, not a `KeyError` mid-generation)."""

    describe_image: StructuredTool
    augment_prompt: StructuredTool
    render_image: StructuredTool
    embed_images: StructuredTool
    select_diverse_subsets: StructuredTool
    build_matrices: StructuredTool

    def all(self) -> list[StructuredTool]:
        """Every tool, in the pipeline's order."""
        return [getattr(self, spot.name) for spot in fields(self)]


def generation_tools(
    runtime: SolveRuntime, generator: ImageGenerator, embedder: ImageEmbedder
) -> GenerationTools:
    """The six tools, bound to the agents by role (describer, augmenter), a generator and an embedder."""
    return GenerationTools(
        describe_image=describe_image_tool(runtime),
        augment_prompt=augment_prompt_tool(runtime),
        render_image=render_image_tool(runtime, generator),
        embed_images=embed_images_tool(embedder),
        select_diverse_subsets=select_diverse_subsets_tool,
        build_matrices=build_matrices_tool,
    )
