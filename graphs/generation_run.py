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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from pydantic import BaseModel, Field

from agents.image_embedders import resolve_image_embedder
from agents.image_generators import resolve_generator
from agents.registry import resolve_agent
from agents.secrets import redact
from datasets_io.catalog import open_dataset
from datasets_io.concept_groups import check_group
from datasets_io.errors import DatasetError
from datasets_io.generated import (
    MANIFEST_FILE,
    Matrix,
    Pool,
    PoolImage,
    SourceConcept,
    write_labels,
    write_manifest,
)
from datasets_io.problem import BongardProblem
from datasets_io.reviews import GenerationRecords, Review
from datasets_io.store import ResultsStore
from datasets_io.workspace import workspace_home
from graphs.checkpoints import open_checkpoints
from graphs.generation import (
    GenerationRuntime,
    GenerationSettings,
    GenerationState,
    ReviewItem,
    SourceItem,
    generation_graph,
    resume_with,
)
from graphs.nodes import SolveRuntime


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
            source=problem.id, row=row, left=problem.concept.left, right=problem.concept.right,
            group=group,
        )  # fmt: skip

    def _runtime(self) -> GenerationRuntime:
        built = {
            role: resolve_agent(spec, self.config.agent_params, home=self.home)
            for role, spec in self.config.agents.items()
        }
        solve = SolveRuntime(
            agents=built,
            render_dir=self.home / "renders",
            call_slots=asyncio.Semaphore(self.config.concurrency),
        )
        generator = resolve_generator(self.config.generator, self.config.generator_params)
        return GenerationRuntime(solve, generator, resolve_image_embedder(self.config.embedder))

    async def run(self) -> GenerationStatus:
        """Advance every source as far as it goes; write the dataset once all are built."""
        status = GenerationStatus(self.id, self.folder)
        runtime = self._runtime()
        slots = asyncio.Semaphore(self.config.concurrency)
        results: dict[str, GenerationState] = {}
        async with open_checkpoints(self.home) as checkpoints:
            graph = generation_graph().copy(update={"checkpointer": checkpoints})

            async def advance(problem: BongardProblem, concept: SourceConcept) -> None:
                config = RunnableConfig(
                    configurable={"thread_id": f"{self.id}/{problem.id}"}, recursion_limit=64
                )
                item = SourceItem(problem, concept, self.config.settings, runtime)
                async with slots:
                    snapshot = await graph.aget_state(config)
                    if snapshot.interrupts:
                        decided = self._decisions(problem.id)
                        if decided is None:
                            status.awaiting[problem.id] = self._undecided(problem.id)
                            return
                        await graph.ainvoke(
                            Command(resume=resume_with(decided)), config, context=item, durability="sync"
                        )
                    elif "matrices" not in snapshot.values:
                        start: GenerationState | None = None if snapshot.values else {"trace": []}
                        await graph.ainvoke(start, config, context=item, durability="sync")
                    snapshot = await graph.aget_state(config)
                if snapshot.interrupts:
                    self._ask_for_review(snapshot.interrupts[0].value["images"])
                    status.awaiting[problem.id] = self._undecided(problem.id)
                    return
                results[problem.id] = cast(GenerationState, snapshot.values)
                status.built.append(problem.id)

            async def guarded(problem: BongardProblem, concept: SourceConcept) -> None:
                try:
                    await advance(problem, concept)
                except Exception as error:  # one source's failure must not lose the others' progress
                    status.failed[problem.id] = f"{type(error).__name__}: {redact(str(error))}"

            await asyncio.gather(*(guarded(p, c) for p, c in zip(self.sources, self.concepts, strict=True)))
        if not status.awaiting and not status.failed:
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
