"""Pieces every strategy graph is built from: state, runtime, images, messages, calls.

Graph state stays plain JSON (the problem as a dict, notes, the trace); the
agents, prompts and render folder travel in the run's configuration
(`configurable.runtime`), never in globals.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send
from pydantic import BaseModel

from agents.call import AgentReply, CallSpec, ImageSource, TaskKind
from agents.images import image_block
from agents.managed import ManagedAgent
from agents.prompt_library import PromptLibrary, prompt_family
from datasets_io.problem import BongardProblem, Concept, Panel, Side
from datasets_io.render import Variant, panel_image, render_sheet, save_png
from graphs.answer import Answer, CallTrace, parse_rules
from graphs.registry import StrategyError

CASE_STUDY = prompt_family("case_study", "graphs")


class SolveState(TypedDict, total=False):
    problem: dict[str, Any]
    inputs: dict[str, Any]
    notes: Annotated[list[dict[str, Any]], operator.add]
    """Intermediate results (descriptions, comparisons), written by parallel branches."""
    trace: Annotated[list[dict[str, Any]], operator.add]
    answer: dict[str, Any]


@dataclass
class SolveRuntime:
    """Everything a graph needs that is not state: agents by role, prompts, where images go."""

    agents: Mapping[str, ManagedAgent]
    render_dir: Path
    prompts: PromptLibrary = field(default_factory=PromptLibrary)
    variant: Variant = "plain"
    call_slots: asyncio.Semaphore | None = None
    """A bound on model calls in flight across the whole run (the run's concurrency)."""

    def agent(self, role: str) -> ManagedAgent:
        if role in self.agents:
            return self.agents[role]
        if "default" in self.agents:
            return self.agents["default"]
        raise KeyError(f"no agent for role {role!r} (roles given: {', '.join(self.agents)})")


def runtime_of(config: RunnableConfig) -> SolveRuntime:
    runtime = config.get("configurable", {}).get("runtime")
    if not isinstance(runtime, SolveRuntime):
        raise TypeError("the graph needs a SolveRuntime under config['configurable']['runtime']")
    return runtime


def problem_of(state: Mapping[str, Any]) -> BongardProblem:
    return BongardProblem.model_validate(state["problem"], context={"check_paths": False})


def _render_path(runtime: SolveRuntime, problem: BongardProblem, name: str, panels: Sequence[Panel]) -> Path:
    digest = hashlib.sha256()
    for panel in panels:
        stat = panel.path.stat()
        digest.update(f"{panel.ref}:{panel.path}:{stat.st_mtime_ns}:{stat.st_size};".encode())
    folder = runtime.render_dir / problem.dataset.replace("/", "_")
    return folder / f"{problem.id}-{name}-{runtime.variant}-{digest.hexdigest()[:12]}.png"


def sheet_source(runtime: SolveRuntime, problem: BongardProblem) -> ImageSource:
    """The problem's sheet as a file (rendered once, reused) and the panels behind it."""
    path = _render_path(runtime, problem, "sheet", problem.context_panels)
    if not path.is_file():
        save_png(render_sheet(problem, runtime.variant), path)
    return ImageSource(path=path, panels=problem.context_panels, layout="sheet")


def panel_source(runtime: SolveRuntime, problem: BongardProblem, panel: Panel) -> ImageSource:
    """One panel as its own image; variants other than plain are rendered to a file."""
    if runtime.variant == "plain":
        return ImageSource(path=panel.path, panels=[panel], layout="panel")
    path = _render_path(runtime, problem, panel.ref, [panel])
    if not path.is_file():
        save_png(panel_image(panel, runtime.variant), path)
    return ImageSource(path=path, panels=[panel], layout="panel")


def user_message(text: str, images: Sequence[ImageSource] = ()) -> HumanMessage:
    content: list[str | dict[Any, Any]] = [{"type": "text", "text": text}]
    content += [image_block(image.path) for image in images]
    return HumanMessage(content=content)


def intro(runtime: SolveRuntime, problem: BongardProblem) -> str:
    """The shared task introduction every strategy's prompt starts from."""
    return runtime.prompts.fill(CASE_STUDY, "intro", panels_per_side=problem.panels_per_side)


def with_intro(runtime: SolveRuntime, problem: BongardProblem, name: str, **values: object) -> str:
    return intro(runtime, problem) + "\n\n" + runtime.prompts.fill(CASE_STUDY, name, **values)


async def call_agent(
    runtime: SolveRuntime,
    role: str,
    messages: Sequence[BaseMessage],
    *,
    task: TaskKind,
    images: Sequence[ImageSource],
    conversation: str,
    step: int,
    schema: type[BaseModel] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> tuple[AgentReply, dict[str, Any]]:
    """One model call with its structured metadata; returns the reply and its trace entry.

    `images` are all images in `messages`, in order (earlier turns included).
    """
    agent = runtime.agent(role)
    call = CallSpec(task=task, output_schema=schema, images=list(images), extra=dict(extra or {}))
    async with runtime.call_slots or contextlib.nullcontext():
        reply = await agent.acall(messages, call)
    last = messages[-1]
    prompt = (
        last.content
        if isinstance(last.content, str)
        else " ".join(
            str(b.get("text", "")) for b in last.content if isinstance(b, dict) and b.get("type") == "text"
        )
    )
    trace = CallTrace(
        role=role,
        agent=agent.spec,
        task=task,
        conversation=conversation,
        step=step,
        images=[[panel.ref for panel in image.panels] for image in images],
        prompt=prompt,
        reply=reply.text,
        parsed=reply.parsed,
        parse_status=reply.parse_status,
        input_tokens=reply.usage.input_tokens,
        output_tokens=reply.usage.output_tokens,
        cost_usd=reply.cost_usd,
        latency_s=reply.latency_s,
        cache_hit=reply.cache_hit,
    )
    return reply, trace.model_dump(mode="json")


def free_answer(strategy: str, problem: BongardProblem, reply: AgentReply) -> dict[str, Any]:
    """A natural-language answer with its `Left:` / `Right:` rules parsed where present."""
    left, right = parse_rules(reply.text)
    parsed = left is not None and right is not None
    return Answer(
        strategy=strategy,
        problem=problem.key,
        text=reply.text,
        left_rule=left,
        right_rule=right,
        parse_status="ok" if parsed else "failed",
        parse_error=None if parsed else "no 'Left: ...' and 'Right: ...' lines in the answer",
    ).model_dump(mode="json", exclude={"trace"})


def label_answer(
    strategy: str, problem: BongardProblem, reply: AgentReply, field: str, label: int, **details: Any
) -> dict[str, Any]:
    """A chosen label (the reply's `field`) scored exactly against the true one."""
    chosen = reply.parsed[field] if reply.parsed else None
    return Answer(
        strategy=strategy,
        problem=problem.key,
        text=reply.text,
        label=chosen,
        expected={"label": label},
        correct=None if chosen is None else chosen == label,
        parse_status=reply.parse_status,
        parse_error=reply.parse_error,
        details=details,
    ).model_dump(mode="json", exclude={"trace"})


Graph = CompiledStateGraph[Any, Any, Any, Any]


def graph_of(*nodes: tuple[str, Any]) -> StateGraph[SolveState]:
    graph: StateGraph[SolveState] = StateGraph(SolveState)
    for name, node in nodes:
        graph.add_node(name, node)
    return graph


def linear_graph(*nodes: tuple[str, Any]) -> Graph:
    """START -> each node in turn -> END."""
    graph = graph_of(*nodes)
    names = [START, *(name for name, _ in nodes), END]
    for source, target in itertools.pairwise(names):
        graph.add_edge(source, target)
    return graph.compile()


def fan_out_graph(
    fan_out: Any, worker: tuple[str, Any], finish: Any, before: tuple[str, Any] | None = None
) -> Graph:
    """START [-> `before`] -> `worker` once per `Send` from `fan_out` (concurrently) -> `finish` -> END."""
    graph = graph_of(*([before] if before else []), worker, ("finish", finish))
    if before:
        graph.add_edge(START, before[0])
    graph.add_conditional_edges(before[0] if before else START, fan_out, [worker[0]])
    graph.add_edge(worker[0], "finish")
    graph.add_edge("finish", END)
    return graph.compile()


def send_each(node: str, listed: str, one: str) -> Callable[[SolveState], list[Send]]:
    """A fan-out: `node` once per item of `inputs[listed]`, each run seeing its item as `inputs[one]`."""

    def sends(state: SolveState) -> list[Send]:
        return [
            Send(node, {**state, "inputs": {**state["inputs"], one: item}})
            for item in state["inputs"][listed]
        ]

    return sends


def panel_by_ref(problem: BongardProblem, ref: str) -> Panel:
    return next(panel for panel in problem.all_panels if panel.ref == ref)


def side_of_label(label: str | None) -> Side | None:
    """`LEFT` / `RIGHT` as a model writes them -> the problem's side names."""
    return {"LEFT": "left", "RIGHT": "right"}.get(label or "")  # type: ignore[return-value]


def needs_concept(problem: BongardProblem) -> Concept:
    if problem.concept is None:
        raise StrategyError(f"{problem.key} has no concept")
    return problem.concept
