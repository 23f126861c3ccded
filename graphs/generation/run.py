"""Running the generation graph over source problems, resumably, and writing the dataset at the end.

Each source problem is one checkpointed LangGraph thread. A thread that stops
at the human review leaves its images in the store as pending reviews; once
every one has a decision (`bongard review`), `bongard generate --resume`
continues it from its checkpoint, so nothing rendered is rendered again. When
every source is built, the folder gets `pool.json`, `dataset.json` and
`labels.csv` in the released Bongard-RWR+ layout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, StateSnapshot
from pydantic import BaseModel, Field

from agents.cache import ReplyCache
from agents.image_embedders import resolve_image_embedder
from agents.image_generators import resolve_generator
from agents.limits import InFlight, in_flight
from agents.managed import ManagedAgent
from agents.registry import resolve_agent
from agents.secrets import redact
from datasets_io.catalog import open_dataset
from datasets_io.concept_groups import check_group
from datasets_io.errors import DatasetError
from datasets_io.generation.generated import (
    MANIFEST_FILE,
    Matrix,
    Pool,
    PoolImage,
    SourceConcept,
    write_labels,
    write_manifest,
)
from datasets_io.problem import BongardProblem
from datasets_io.workspace import workspace_home
from graphs.generation.graph import Generation as GenerationGraph
from graphs.generation.graph import (
    GenerationRuntime,
    GenerationSettings,
    GenerationState,
    ReviewItem,
    SourceItem,
    generation_graph,
    resume_with,
)
from graphs.nodes import SolveRuntime
from graphs.runs.checkpoints import open_checkpoints
from results.reviews import GenerationRecords, Review
from results.store import ResultsStore


class GenerationConfig(BaseModel):
    """Everything that defines a generation run; a resumed run keeps it unchanged."""

    source: str
    """The dataset of source problems (a name or FORMAT:PATH)."""
    data_dir: str | None = None
    dataset_options: dict[str, str] = Field(default_factory=dict)
    problems: list[str] | None = None
    agents: dict[str, str]
    """Role -> agent spec: describer, augmenter (and reviewer, review_judge for the automatic review)."""
    agent_params: dict[str, Any] = Field(default_factory=dict)
    generator: str = "shapes"
    generator_params: dict[str, Any] = Field(default_factory=dict)
    embedder: str = "classical"
    settings: GenerationSettings
    groups: dict[str, str] = Field(default_factory=dict)
    """Source problem id -> concept group, beside those the source dataset gives."""
    concurrency: int = Field(default=4, ge=1)


@dataclass
class GenerationStatus:
    generation_id: str
    folder: Path
    built: list[str] = field(default_factory=list)
    awaiting: dict[str, int] = field(default_factory=dict)
    """Source -> images still waiting for a reviewer's decision."""
    problems: int = 0
    """Problems written, once every source is built (none for a source whose sides have too few
    accepted images: `stops` says so)."""
    stops: dict[str, str] = field(default_factory=dict)
    """Source and side -> why its subset selection stopped."""
    failed: dict[str, str] = field(default_factory=dict)
    """Source -> the error that stopped it (what it had finished stays checkpointed)."""

    @property
    def complete(self) -> bool:
        return not self.awaiting and not self.failed


@dataclass(frozen=True)
class SourceUnit:
    """A source with work left: one unit of a generation, run here or by a Ray worker."""

    source: str
    decided: dict[int, str] | None = None
    """The review's decisions for its images, when its thread waits for them and all are in."""


@dataclass(frozen=True)
class Advanced:
    """Where a pass left a source's thread: built, or stopped at the human review."""

    values: GenerationState | None = None
    """The built thread's state (its images and matrices); None while it waits for decisions."""
    asked: list[ReviewItem] = field(default_factory=list)
    """The images this pass stopped at the review for, to be stored as pending."""


def settled(snapshot: StateSnapshot, decided: dict[int, str] | None) -> Advanced | None:
    """A thread with nothing to run as it stands (built, or waiting for decisions); else None."""
    if snapshot.interrupts:
        return Advanced() if decided is None else None
    return Advanced(cast(GenerationState, snapshot.values)) if "matrices" in snapshot.values else None


async def advance_source(
    graph: GenerationGraph, item: SourceItem, thread: RunnableConfig, decided: dict[int, str] | None
) -> Advanced:
    """One pass of a source's thread: started, continued (from its checkpoint, with the decisions
    once the review is done) as far as it goes, or left as it stands."""
    snapshot = await graph.aget_state(thread)
    if (advanced := settled(snapshot, decided)) is not None:
        return advanced
    start: Command[Any] | GenerationState | None = None if snapshot.values else {"trace": []}
    if snapshot.interrupts and decided is not None:
        start = Command(resume=resume_with(decided))
    await graph.ainvoke(start, thread, context=item, durability="sync")
    snapshot = await graph.aget_state(thread)
    if snapshot.interrupts:
        return Advanced(asked=snapshot.interrupts[0].value["images"])
    return Advanced(cast(GenerationState, snapshot.values))


class Generation:
    def __init__(
        self, generation_id: str, config: GenerationConfig, store: ResultsStore, home: Path | None
    ) -> None:
        self.id, self.config, self.home = generation_id, config, workspace_home(home)
        self.records = GenerationRecords(store)
        dataset = open_dataset(
            config.source, Path(config.data_dir) if config.data_dir else None, config.dataset_options
        )
        self.sources = [
            dataset.problem(dataset.resolve_id(p)) for p in config.problems or dataset.problem_ids()
        ]
        self.concepts = [self._concept(row, problem) for row, problem in enumerate(self.sources)]
        self._by_source = {p.id: (p, c) for p, c in zip(self.sources, self.concepts, strict=True)}
        self.folder = Path(config.settings.folder)

    def _concept(self, row: int, problem: BongardProblem) -> SourceConcept:
        if problem.concept is None or not problem.concept.right:
            raise DatasetError(f"{problem.key} states no concept for both sides; it cannot seed a generation")
        group = self.config.groups.get(problem.id) or problem.concept_group
        try:
            group = check_group(group) if group else None
        except ValueError as error:
            raise DatasetError(f"{problem.key}: {error}") from None
        return SourceConcept(
            source=problem.id,
            row=row,
            left=problem.concept.left,
            right=problem.concept.right,
            group=group,
        )

    def agents(self, cache: ReplyCache | None = None) -> dict[str, ManagedAgent]:
        """The generation's agents by role (`cache`: where they keep replies; None: the workspace's);
        one that sets no concurrency of its own follows `--concurrency`, not its provider's default."""
        built = {
            role: resolve_agent(spec, self.config.agent_params, home=self.home, cache=cache)
            for role, spec in self.config.agents.items()
        }
        for agent in built.values():
            agent.run_concurrency = self.config.concurrency
        return built

    def in_flight(self, agents: Iterable[ManagedAgent]) -> InFlight:
        """How many model calls the generation's `agents` can have in flight, and which limit binds."""
        return in_flight(self.config.concurrency, ((agent.endpoint, agent.rate_limits) for agent in agents))

    def runtime(self, calls: int | None = None, cache: ReplyCache | None = None) -> GenerationRuntime:
        """The agents, generator and embedder, built once per process; `calls`: model calls in flight
        (default: the run's concurrency)."""
        solve = SolveRuntime(
            agents=self.agents(cache),
            render_dir=self.home / "renders",
            call_slots=asyncio.Semaphore(calls or self.config.concurrency),
        )
        generator = resolve_generator(self.config.generator, self.config.generator_params)
        return GenerationRuntime(solve, generator, resolve_image_embedder(self.config.embedder))

    def thread(self, source: str) -> RunnableConfig:
        """A source's checkpointed thread."""
        return RunnableConfig(configurable={"thread_id": f"{self.id}/{source}"}, recursion_limit=64)

    def item(self, source: str, runtime: GenerationRuntime) -> SourceItem:
        problem, concept = self._by_source[source]
        return SourceItem(problem, concept, self.config.settings, runtime)

    async def run(self, announce: Callable[[str], None] | None = None) -> GenerationStatus:
        """Advance every source as far as it goes, here; write the dataset once all are built.
        `announce` is told the calls in flight once the agents are built (none are, when nothing
        is left to do)."""
        status, results = GenerationStatus(self.id, self.folder), dict[str, GenerationState]()
        async with open_checkpoints(self.home) as checkpoints:
            graph = generation_graph().copy(update={"checkpointer": checkpoints})
            units = await self.unsettled(graph, status, results)
            if units:  # a finished generation builds no agent
                runtime, slots = self.runtime(), asyncio.Semaphore(self.config.concurrency)
                if announce is not None:
                    announce(str(self.in_flight(runtime.solve.agents.values())))

                async def advance(unit: SourceUnit) -> None:
                    try:
                        async with slots:
                            item = self.item(unit.source, runtime)
                            advanced = await advance_source(
                                graph, item, self.thread(unit.source), unit.decided
                            )
                    except Exception as error:  # one source's failure must not lose the others' progress
                        self.fail(status, unit.source, error)
                    else:
                        self.record(status, results, unit.source, advanced)

                await asyncio.gather(*(advance(unit) for unit in units))
        return self.finish(status, results)

    async def unsettled(
        self, graph: GenerationGraph, status: GenerationStatus, results: dict[str, GenerationState]
    ) -> list[SourceUnit]:
        """The sources with work left, each with its review decisions; the others, built or still
        waiting for decisions, recorded as they stand (read from the checkpoints, nothing run)."""
        units: list[SourceUnit] = []
        for problem in self.sources:
            snapshot = await graph.aget_state(self.thread(problem.id))
            decided = self._decisions(problem.id) if snapshot.interrupts else None
            if (advanced := settled(snapshot, decided)) is not None:
                self.record(status, results, problem.id, advanced)
            else:
                units.append(SourceUnit(problem.id, decided))
        return units

    def record(
        self, status: GenerationStatus, results: dict[str, GenerationState], source: str, advanced: Advanced
    ) -> None:
        """Where a source's pass left it, into the status and the store (only the driver writes)."""
        if advanced.values is None:
            if advanced.asked:
                self._ask_for_review(advanced.asked)
            status.awaiting[source] = self._undecided(source)
            return
        results[source] = advanced.values
        status.built.append(source)

    def fail(self, status: GenerationStatus, source: str, error: BaseException) -> None:
        status.failed[source] = f"{type(error).__name__}: {redact(str(error))}"

    def finish(self, status: GenerationStatus, results: dict[str, GenerationState]) -> GenerationStatus:
        """The dataset written, once every source is built."""
        if status.complete:
            self._write(status, [results[p.id] for p in self.sources])
        return status

    def _ask_for_review(self, images: list[ReviewItem]) -> None:
        pending = [Review(decision=None, reviewer=None, **image) for image in images]
        self.records.add_pending(self.id, pending)

    def _decisions(self, source: str) -> dict[int, str] | None:
        """The stored decisions for a source's images, once every image has one."""
        reviews = self.records.reviews(self.id, source)
        if not reviews or any(r.decision is None for r in reviews):
            return None
        return {r.image_id: str(r.decision) for r in reviews}

    def _undecided(self, source: str) -> int:
        return sum(r.decision is None for r in self.records.reviews(self.id, source))

    def _write(self, status: GenerationStatus, built: list[GenerationState]) -> None:
        images = [PoolImage.model_validate(i) for values in built for i in values["images"]]
        matrices = [Matrix.model_validate(m) for values in built for m in values["matrices"]]
        self.records.save(self.id, [self._review_of(i) for i in images if i.reviewer != "human"])
        for concept, values in zip(self.concepts, built, strict=True):
            for side in values["subsets"]:
                status.stops[f"{concept.source} {side['side']}"] = side["stop"]
        self.folder.mkdir(parents=True, exist_ok=True)
        Pool(concepts=self.concepts, images=images).write(self.folder)
        write_manifest(self.folder, MANIFEST_FILE, matrices, images)
        write_labels(self.folder, self.concepts)
        status.problems = len(matrices)
        self.records.finish(self.id)

    def _review_of(self, image: PoolImage) -> Review:
        """An automatic review's decision on an image, as the store keeps reviews."""
        concept = next(c for c in self.concepts if c.source == image.source)
        side_concept = concept.left if image.side == "left" else concept.right
        return Review(
            image.image_id, image.source, image.side, image.path, side_concept, image.decision, image.reviewer
        )


def start_generation(config: GenerationConfig, store: ResultsStore, home: Path | None = None) -> Generation:
    generation_id = GenerationRecords(store).create(config.model_dump(mode="json"))
    return Generation(generation_id, config, store, home)


def resume_generation(generation: str, store: ResultsStore, home: Path | None = None) -> Generation:
    records = GenerationRecords(store)
    generation_id = records.resolve(generation)
    return Generation(
        generation_id, GenerationConfig.model_validate(records.config(generation_id)), store, home
    )
