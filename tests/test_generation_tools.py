"""The generation pipeline's tools, each used alone, as a LangChain tool is."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import StructuredTool

from agents.image_embedders import ClassicalEmbedder
from agents.image_generators import resolve_generator
from graphs.generation.tools import (
    PromptPair,
    ToolCallError,
    augment_prompt_tool,
    build_matrices_tool,
    generation_tools,
    select_diverse_subsets_tool,
)
from graphs.nodes import SolveRuntime
from tests.scripted import Request, ScriptedAgent

RWR_31 = ("bongard-rwr", "31", "left", "0.jpg")


def prompt_pair(request: Request) -> PromptPair:
    return PromptPair(positive=f"two red circles seen in {request.images[-1]}", negative="squares")


def numbered_prompts(request: Request) -> dict[str, list[str]]:
    return {"prompts": [f"{n + 1} blue triangles" for n in range(int(request.call.extra["count"]))]}


def runtime(agent: ScriptedAgent, tmp_path: Path) -> SolveRuntime:
    return SolveRuntime(agents={"default": agent.managed()}, render_dir=tmp_path)


def call(tool: StructuredTool, **args: Any) -> Any:
    return asyncio.run(tool.ainvoke(args))


def test_the_six_tools_carry_names_descriptions_and_argument_schemas(tmp_path: Path) -> None:
    tools = generation_tools(
        runtime(ScriptedAgent(), tmp_path), resolve_generator("shapes"), ClassicalEmbedder()
    )
    assert [tool.name for tool in tools.all()] == [
        "describe_image", "augment_prompt", "render_image", "embed_images", "select_diverse_subsets",
        "build_matrices",
    ]  # fmt: skip  # each tool's own name, as an agent sees it, is its attribute's
    for tool in tools.all():
        assert tool.description and tool.args  # what a tool-calling agent is shown
    assert set(tools.describe_image.args) == {"image_path", "side", "concept"}
    assert set(tools.build_matrices.args) >= {"source", "row", "left_subsets", "right_subsets", "seed"}


def test_describe_image_sends_the_image_and_its_sides_concept(shared_data: Path, tmp_path: Path) -> None:
    agent = ScriptedAgent(replies={PromptPair: prompt_pair})
    tools = generation_tools(runtime(agent, tmp_path), resolve_generator("shapes"), ClassicalEmbedder())
    image = shared_data.joinpath(*RWR_31)
    found = call(tools.describe_image, image_path=str(image), side="left", concept="One line")
    [request] = agent.requests
    assert request.call.task == "describe" and request.call.output_schema is PromptPair
    assert request.image_paths() == [str(image)] and request.call.images[0].panels[0].side == "left"
    assert "Concept: One line" in request.text() and request.call.extra["concept"] == "One line"
    assert found["positive"].startswith("two red circles") and found["negative"] == "squares"
    assert found["call"]["task"] == "describe" and found["call"]["agent"] == "scripted:recorder"


def test_augment_prompt_asks_for_exactly_n_distinct_prompts(tmp_path: Path) -> None:
    agent = ScriptedAgent(replies=numbered_prompts)
    found = call(
        augment_prompt_tool(runtime(agent, tmp_path)), positive="a red circle", concept="Circles", count=4
    )
    [request] = agent.requests
    schema = request.call.output_schema
    assert schema is not None and not isinstance(schema, dict)
    prompts = schema.model_json_schema()["properties"]["prompts"]
    assert (prompts["minItems"], prompts["maxItems"], prompts["items"]["maxLength"]) == (4, 4, 300)
    assert request.images == [] and "Write 4 new prompts" in request.text()
    assert found["prompts"] == [
        "1 blue triangles",
        "2 blue triangles",
        "3 blue triangles",
        "4 blue triangles",
    ]


def test_augment_prompt_names_the_agent_when_it_gives_no_prompts(tmp_path: Path) -> None:
    silent = ScriptedAgent("scripted:silent", lambda request: "no JSON here")
    with pytest.raises(ToolCallError, match="augment_prompt: scripted:silent gave no prompts"):
        call(augment_prompt_tool(runtime(silent, tmp_path)), positive="a circle", concept="Circles", count=2)
    assert len(silent.requests) == 1  # an unusable reply is not asked again unless -M reask_unparsed=true


def test_render_image_writes_the_generators_image_once(tmp_path: Path) -> None:
    tools = generation_tools(
        runtime(ScriptedAgent(), tmp_path), resolve_generator("shapes"), ClassicalEmbedder()
    )
    target = tmp_path / "pool" / "a.png"
    args: dict[str, Any] = {
        "positive": "three green triangles",
        "negative": "circles",
        "seed": 5,
        "size": 128,
    }
    found = call(tools.render_image, out_path=str(target), **args)
    assert found == {"path": str(target), "generator": "shapes:v1"} and target.is_file()
    first = target.read_bytes()
    again = tmp_path / "b.png"
    call(tools.render_image, out_path=str(again), **args)
    assert again.read_bytes() == first  # the test generator is deterministic
    target.write_bytes(b"kept")
    call(tools.render_image, out_path=str(target), **args)
    assert target.read_bytes() == b"kept"  # a rendered image is never rendered again


def test_embed_select_and_build_work_on_plain_values(shared_data: Path, tmp_path: Path) -> None:
    tools = generation_tools(
        runtime(ScriptedAgent(), tmp_path), resolve_generator("shapes"), ClassicalEmbedder()
    )
    paths = [str(shared_data / "bongard-rwr" / "31" / "left" / f"{n}.jpg") for n in range(5)]
    embedded = call(tools.embed_images, paths=paths)
    assert embedded["embedder"] == "classical" and len(embedded["embeddings"]) == 5
    json.dumps(embedded)  # plain JSON, as tool results must be
    selected = call(select_diverse_subsets_tool, embeddings=embedded["embeddings"], size=3, count=2)
    assert len(selected["subsets"]) == 2 and all(len(s) == 3 for s in selected["subsets"])
    assert len(selected["removed"]) == 2 and selected["stop"]
    built = call(
        build_matrices_tool,
        source="31",
        row=4,
        left_rule="One line",
        right_rule="Two lines",
        left_subsets=[[1, 2, 3], [4, 5, 6]],
        right_subsets=[[7, 8, 9], [10, 11, 12], [13, 14, 15]],
        seed=1,
    )
    assert [m["id"] for m in built] == [n * 1000 + 5 for n in range(6)]  # number * 1000 + row + 1
    assert all(m["concept"] == {"left": "One line", "right": "Two lines"} for m in built)
    assert {tuple(sorted(m["left"])) for m in built} == {(1, 2, 3), (4, 5, 6)}
    firsts = [m for m in built if sorted(m["left"]) == [1, 2, 3]]
    assert len({m["left"][-1] for m in firsts}) == 1  # a side subset keeps its test image in every pairing
