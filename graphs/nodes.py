"""Pieces every strategy graph is built from: the item's context, state, images, conversations.

The constants of one item (the problem, the strategy's prepared inputs, the agents,
prompts and render folder) are the graph's runtime context (`Item`), read by nodes
as `runtime.context`; the state holds only what nodes produce, as plain JSON under
named keys. Every model call a node makes is recorded once, by `call_agent`, and
lands in the state's `trace` when the node returns (see `traced`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import operator
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Generic, Protocol, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel
from typing_extensions import TypeVar

from agents.batch_detach import DETACH
from agents.call import AgentReply, CallSpec, ImageSource, TaskKind
from agents.images import image_block
from agents.managed import ManagedAgent
from agents.prompt_library import PromptLibrary, prompt_family
from datasets_io.problem import BongardProblem, Concept, Panel, Side
from datasets_io.render import Variant, panel_image, render_sheet, save_png, shipped_sheet
from graphs.answer import AnswerParts, CallTrace, parse_rules
from graphs.kept import KeptResults
from graphs.registry import Graph, StrategyError

CASE_STUDY = prompt_family("case_study", "graphs")
CASE = "Małkiński et al., ICML 2025 (Bongard case study)"
"""The paper of both case-study families (natural-language and binary settings)."""


@dataclass
class SolveRuntime:
    """What every item of a run shares: agents by role, prompts, where images go, the call bound."""

    agents: Mapping[str, ManagedAgent]
    render_dir: Path
    prompts: PromptLibrary = field(default_factory=PromptLibrary)
    variant: Variant = "plain"
    call_slots: asyncio.Semaphore | None = None
    """A bound on model calls in flight across the whole run (the run's concurrency)."""
    kept: KeptResults | None = None
    """Results made once and kept in the workspace for later runs (authored probes); None: a
    one-off solve keeps nothing."""

    def agent(self, role: str) -> ManagedAgent:
        if role in self.agents:
            return self.agents[role]
        if "default" in self.agents:
            return self.agents["default"]
        raise KeyError(f"no agent for role {role!r} (roles given: {', '.join(self.agents)})")


InputsT = TypeVar("InputsT", covariant=True, default=Any)
"""The strategy's prepared inputs (a `TypedDict` of the family); unnamed, anything (PEP 696).
Covariant: an item whose inputs extend a block's (`ComponentialInputs` over `QueryInputs`) is one
that block takes."""


@dataclass(frozen=True)
class Item(Generic[InputsT]):
    """One item's runtime context: constant for its whole graph run, never checkpointed."""

    problem: BongardProblem
    inputs: InputsT
    """What the strategy's `prepare` derived for this problem (seeded, so a resume gets the same)."""
    run: SolveRuntime

    @property
    def prompts(self) -> PromptLibrary:
        return self.run.prompts

    def panel(self, ref: str) -> Panel:
        return self._panels[ref]

    @functools.cached_property
    def _panels(self) -> dict[str, Panel]:
        """The problem's panels by ref: each call about a panel looked it up among all fourteen."""
        return {panel.ref: panel for panel in self.problem.all_panels}


class Caller(Protocol):
    """What a model call needs of its context: the run (agents, prompts, the call bound)."""

    @property
    def run(self) -> SolveRuntime: ...


@dataclass(frozen=True)
class RunOnly:
    """The context of calls about no problem (a tool describing loose image files)."""

    run: SolveRuntime


Ctx = Runtime[Item[InputsT]]
"""What a node receives beside its state (`runtime.context` is the `Item`). `Ctx[SidesInputs]` has
the type checker check the node's reads of `item.inputs`; a bare `Ctx` takes any inputs."""


class SolveState(TypedDict, total=False):
    """The keys every strategy's state has; each family's state adds its own."""

    trace: Annotated[list[CallTrace], operator.add]
    """Every model call, in the order the nodes finished (written by `traced`, never by hand)."""
    answer: AnswerParts


StateT = TypeVar("StateT", bound=SolveState)
Node = Callable[[StateT, Ctx], Awaitable[StateT]]

_calls: ContextVar[list[CallTrace] | None] = ContextVar("bongard_node_calls", default=None)
IN_FLIGHT_GRACE_S = 20.0
"""How long a call whose item is being given up waits for the reply to a request already sent."""


_paid: ContextVar[list[CallTrace] | None] = ContextVar("bongard_paid_calls", default=None)


@contextlib.contextmanager
def keeping_paid_calls() -> Iterator[list[CallTrace]]:
    """Collect every call made in the block, answered or given up in flight: when its item fails,
    the calls of nodes that finished, failed or were cancelled with it were all paid for."""
    calls: list[CallTrace] = []
    token = _paid.set(calls)
    try:
        yield calls
    finally:
        _paid.reset(token)


@contextlib.contextmanager
def recording_calls() -> Iterator[list[CallTrace]]:
    """Collect the trace of every `call_agent` made inside the block (in this task)."""
    calls: list[CallTrace] = []
    token = _calls.set(calls)
    try:
        yield calls
    finally:
        _calls.reset(token)


def traced(node: Node[StateT]) -> Node[StateT]:
    """The node with the calls it made added to its update under `trace`.

    Parallel branches run as separate tasks, so each collects its own calls.
    """

    @functools.wraps(node)
    async def run(state: StateT, runtime: Ctx) -> StateT:
        with recording_calls() as calls:
            update = await node(state, runtime)
        if calls:
            update["trace"] = calls
        return update

    return run


def _render_path(item: Item[Any], name: str, panels: Sequence[Panel]) -> Path:
    digest = hashlib.sha256()
    for panel in panels:
        stat = panel.path.stat()
        digest.update(f"{panel.ref}:{panel.path}:{stat.st_mtime_ns}:{stat.st_size};".encode())
    if name == "sheet" and (shipped := shipped_sheet(item.problem)) is not None:
        stat = shipped.stat()
        digest.update(f"shipped:{shipped}:{stat.st_mtime_ns}:{stat.st_size};".encode())
    folder = item.run.render_dir / item.problem.dataset.replace("/", "_")
    return folder / f"{item.problem.id}-{name}-{item.run.variant}-{digest.hexdigest()[:12]}.png"


def sheet_source(item: Item[Any]) -> ImageSource:
    """The problem's sheet as a file (rendered once, reused) and the panels behind it."""
    path = _render_path(item, "sheet", item.problem.context_panels)
    if not path.is_file():
        save_png(render_sheet(item.problem, item.run.variant), path)
    return ImageSource(path=path, panels=item.problem.context_panels, layout="sheet")


def panel_source(item: Item[Any], panel: Panel) -> ImageSource:
    """One panel as its own image; variants other than plain are rendered to a file."""
    if item.run.variant == "plain":
        return ImageSource(path=panel.path, panels=[panel], layout="panel")
    path = _render_path(item, panel.ref, [panel])
    if not path.is_file():
        save_png(panel_image(panel, item.run.variant), path)
    return ImageSource(path=path, panels=[panel], layout="panel")


def panel_sources(item: Item[Any], panels: Iterable[Panel]) -> list[ImageSource]:
    return [panel_source(item, panel) for panel in panels]


def user_message(text: str, images: Sequence[ImageSource] = ()) -> HumanMessage:
    content: list[str | dict[Any, Any]] = [{"type": "text", "text": text}]
    content += [image_block(image.path) for image in images]
    return HumanMessage(content=content)


def intro(item: Item[Any]) -> str:
    """The shared task introduction every case-study prompt starts from."""
    return item.prompts.fill(CASE_STUDY, "intro", panels_per_side=item.problem.panels_per_side)


def with_intro(item: Item[Any], name: str, **values: object) -> str:
    return intro(item) + "\n\n" + item.prompts.fill(CASE_STUDY, name, **values)


def _prompt_text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return " ".join(
        str(b.get("text", "")) for b in message.content if isinstance(b, dict) and b.get("type") == "text"
    )


async def call_agent(
    item: Caller,
    role: str,
    messages: Sequence[BaseMessage],
    *,
    task: TaskKind,
    images: Sequence[ImageSource],
    conversation: str,
    step: int,
    schema: type[BaseModel] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> AgentReply:
    """One model call with its structured metadata, recorded in the running node's trace.

    `images` are all images in `messages`, in order (earlier turns included).
    """
    agent = item.run.agent(role)
    call = CallSpec(task=task, output_schema=schema, images=list(images), extra=dict(extra or {}))
    calls = _calls.get()
    if calls is None:
        raise RuntimeError("call_agent ran outside a traced node or `recording_calls` block")

    def trace(reply: AgentReply) -> CallTrace:
        return CallTrace(
            role=role,
            agent=agent.spec,
            task=task,
            conversation=conversation,
            step=step,
            images=[[panel.ref for panel in image.panels] for image in images],
            prompt=_prompt_text(messages[-1]),
            reply=reply.text,
            parsed=reply.parsed,
            parse_status=reply.parse_status,
            stop=reply.stop,
            stop_reason=reply.stop_reason,
            output_mode=reply.output_mode,
            input_tokens=reply.usage.input_tokens,
            output_tokens=reply.usage.output_tokens,
            cache_read_tokens=reply.usage.cache_read_tokens,
            cache_write_tokens=reply.usage.cache_write_tokens,
            cost_usd=reply.cost_usd,
            latency_s=reply.latency_s,
            cache_hit=reply.cache_hit,
            attempts=reply.attempts,
        )

    async with item.run.call_slots or contextlib.nullcontext():
        sent = asyncio.ensure_future(agent.acall(list(messages), call))
        try:
            reply = await asyncio.shield(sent)
        except asyncio.CancelledError:
            if (watch := DETACH.get()) is not None and watch.detached:
                sent.cancel()  # a detached run: its request waits in a kept batch, collected on resume
                raise
            # The item is being given up (a sibling branch met a bad panel) while this request is
            # out, and a provider bills it: its reply is awaited, briefly, so the call is kept and
            # costed with the failed item; one that does not come is kept with its cost unknown.
            done = await _reply_within(sent, IN_FLIGHT_GRACE_S)
            if not done:  # given up in flight: no reply, its cost unknown (None)
                sent.cancel()
                _keep(calls, trace(AgentReply(agent=agent.spec, text="")))
            elif not sent.cancelled() and sent.exception() is None:
                _keep(calls, trace(sent.result()))
            raise
    _keep(calls, trace(reply))
    return reply


async def _reply_within(sent: asyncio.Future[AgentReply], seconds: float) -> bool:
    """Whether the request finished within `seconds`; the cancellations that keep coming while it
    is awaited (LangGraph cancels a failed step's tasks until they end) do not cut the wait short."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not sent.done() and (left := deadline - loop.time()) > 0:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({sent}, timeout=left)
    return sent.done()


def _keep(calls: list[CallTrace], made: CallTrace) -> None:
    """A call in its node's trace and among the item's paid calls."""
    calls.append(made)
    if (paid := _paid.get()) is not None:
        paid.append(made)


@dataclass
class Conversation:
    """One context window with one agent: each `ask` adds a user turn and the reply to it."""

    item: Caller
    role: str
    name: str
    system: str | None = None
    messages: list[BaseMessage] = field(default_factory=list)
    images: list[ImageSource] = field(default_factory=list)
    turns: int = 0

    def __post_init__(self) -> None:
        if self.system is not None:
            self.messages.append(SystemMessage(content=self.system))

    async def ask(
        self,
        text: str,
        images: Sequence[ImageSource] = (),
        *,
        task: TaskKind,
        schema: type[BaseModel] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> AgentReply:
        self.messages.append(user_message(text, images))
        self.images += images
        reply = await call_agent(
            self.item,
            self.role,
            self.messages,
            task=task,
            images=self.images,
            conversation=self.name,
            step=self.turns,
            schema=schema,
            extra=extra,
        )
        self.messages.append(AIMessage(content=reply.text))
        self.turns += 1
        return reply


async def ask(
    item: Caller,
    role: str,
    text: str,
    images: Sequence[ImageSource] = (),
    *,
    task: TaskKind,
    conversation: str,
    schema: type[BaseModel] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> AgentReply:
    """A call of one user turn in a context of its own; its images are the turn's."""
    return await Conversation(item, role, conversation).ask(
        text, images, task=task, schema=schema, extra=extra
    )


def free_answer(reply: AgentReply) -> AnswerParts:
    """A natural-language answer with its `Left:` / `Right:` rules parsed where present."""
    left, right = parse_rules(reply.text)
    parsed = left is not None and right is not None
    return AnswerParts(
        text=reply.text,
        left_rule=left,
        right_rule=right,
        parse_status="ok" if parsed else "failed",
        parse_error=None if parsed else "no 'Left: ...' and 'Right: ...' lines in the answer",
    )


def label_answer(
    reply: AgentReply, field: str, label: int | str, expected_as: str = "label", **details: Any
) -> AnswerParts:
    """A chosen label (the reply's `field`) scored exactly against the true one (kept in
    `expected` under `expected_as`); a reply with no label is wrong, its format error counted apart."""
    chosen = reply.parsed[field] if reply.parsed else None
    return AnswerParts(
        text=reply.text,
        label=chosen,
        expected={expected_as: label},
        correct=chosen is not None and chosen == label,
        parse_status=reply.parse_status,
        parse_error=reply.parse_error,
        details=details,
    )


def graph_of(
    state: type[StateT], *nodes: tuple[str, Node[StateT]]
) -> StateGraph[StateT, Item[Any], StateT, StateT]:
    """A graph over `state` with the item as runtime context; every node is `traced`."""
    graph: StateGraph[StateT, Item[Any], StateT, StateT] = StateGraph(state, context_schema=Item)
    for name, node in nodes:
        wrapped: Any = traced(node)  # LangGraph's overloads cannot see a generic state's node type
        graph.add_node(name, wrapped)
    return graph


def linear_graph(state: type[StateT], *nodes: tuple[str, Node[StateT]]) -> Graph:
    """START -> each node in turn -> END."""
    graph = graph_of(state, *nodes)
    names = [START, *(name for name, _ in nodes), END]
    for source, target in itertools.pairwise(names):
        graph.add_edge(source, target)
    return graph.compile()


FanOut = Callable[[Any, Ctx], list[Send]]


def fan_out_graph(
    state: type[StateT],
    fan_out: FanOut,
    worker: tuple[str, Node[StateT]],
    finish: Node[StateT],
    before: tuple[str, Node[StateT]] | None = None,
) -> Graph:
    """START [-> `before`] -> `worker` once per `Send` from `fan_out` (concurrently) -> `finish` -> END."""
    graph = graph_of(state, *([before] if before else []), worker, ("finish", finish))
    if before:
        graph.add_edge(START, before[0])
    graph.add_conditional_edges(before[0] if before else START, fan_out, [worker[0]])
    graph.add_edge(worker[0], "finish")
    graph.add_edge("finish", END)
    return graph.compile()


def send_each(node: str, key: str, items: Callable[[Item[Any]], Iterable[object]]) -> FanOut:
    """A fan-out: `node` once per item of `items(context)`, each run seeing its own under `key`."""

    def sends(state: Mapping[str, Any], runtime: Ctx) -> list[Send]:
        return [Send(node, {**state, key: one}) for one in items(runtime.context)]

    return sends


def side_of_label(label: str | None) -> Side | None:
    """`LEFT` / `RIGHT` as a model writes them -> the problem's side names."""
    return {"LEFT": "left", "RIGHT": "right"}.get(label or "")  # type: ignore[return-value]


def needs_concept(problem: BongardProblem) -> Concept:
    if problem.concept is None:
        raise StrategyError(f"{problem.key} has no concept")
    return problem.concept
