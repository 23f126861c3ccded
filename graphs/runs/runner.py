"""Running a strategy over a dataset: bounded concurrency, resumable, every item into the store.

Items are (problem, attempt) pairs, streamed through a fixed pool of workers
so memory does not grow with the dataset. Each item runs as a checkpointed
LangGraph thread and, once finished, is written with its calls in one
transaction; a resumed run skips every item already done (and, with
`retry_errors`, retries the failed ones) and continues a half-done item from
its last checkpoint, so no finished model call is paid twice. A fault of one
item (a panel that does not decode, a call that fails for good) fails that item
alone; a dead endpoint stops the whole run (`agents.breaker`).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agents.batch_ledger import BATCH_SCOPE, LEDGER_FILE, BatchScope
from agents.breaker import DEFAULT_MAX_FAILURES, CircuitBreaker
from agents.cache import ReplyCache, ResponseCache
from agents.limits import InFlight, in_flight
from agents.managed import AgentCallError, ManagedAgent
from agents.prompt_library import PromptLibrary
from agents.registry import (
    CACHE_FILE,
    check_agent,
    dropped_decoding,
    get_provider,
    resolve_agent,
    shared_params,
    split_spec,
)
from datasets_io.catalog import Dataset, ScanResult, default_data_dir, open_dataset
from datasets_io.errors import BongardError, DatasetError
from datasets_io.file_digests import DIGESTS_FILE
from datasets_io.images import natural_key
from datasets_io.problem import BongardProblem, ProblemSummary
from datasets_io.records import CallTrace
from datasets_io.render import Variant
from datasets_io.sampling import SampleSpec, draw
from datasets_io.survey_cache import SURVEYS, survey_kept_later
from datasets_io.workspace import workspace_home
from graphs.answer import Answer
from graphs.kept import KeptResults
from graphs.nodes import SolveRuntime, keeping_paid_calls
from graphs.registry import (
    WHOLE_ANSWERS,
    DatasetContext,
    MemberAnswer,
    PaperProtocol,
    Reused,
    StrategyError,
    StrategyInfo,
    get_strategy,
)
from graphs.runs.checkpoints import Checkpoints, checkpointed_trace, item_thread, open_checkpoints
from graphs.runs.provenance import dataset_fingerprint, session_record, toolkit_version
from graphs.solve import no_test_images, solve
from results.run_compatibility import model_label
from results.store import ResultsStore, StoreError

RANGE = re.compile(r"^(\d+)-(\d+)$")


class RunConfig(BaseModel):
    """Everything that defines a run; a resumed run keeps it unchanged."""

    strategy: str
    dataset: str
    data_dir: str | None = None
    dataset_options: dict[str, str] = Field(default_factory=dict)
    agents: dict[str, str]
    """Role -> agent spec (reasoner, describer)."""
    agent_params: dict[str, Any] = Field(default_factory=dict)
    agent_config: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """An `--agent-config` file's tables (agent spec or "*" -> parameters), beneath `agent_params`."""
    problems: list[str] | None = None
    sample: SampleSpec | None = None
    """How `problems` was drawn, when it was (`--sample`): the drawn ids are stored in `problems`."""
    attempts: int = Field(default=1, ge=1)
    seed: int = 0
    concurrency: int = Field(default=4, ge=1)
    """Problems solved at once, and model calls in flight across the run (unless a concurrency the
    user set for an agent, `-M concurrency=K`, allows fewer; a provider's default gives way)."""
    variant: Variant = "plain"
    strategy_options: dict[str, str] = Field(default_factory=dict)
    excluded: list[str] = Field(default_factory=list)
    """Problem ids dropped from the run on a resume (`--exclude`): never solved, not planned."""
    paper_decoding: list[str] = Field(default_factory=list)
    """The keys of `agent_params` that are the strategy paper's decoding, not set with `-M`: a model
    that cannot take one is not sent it (`agents.model_families`)."""
    decoding_dropped: dict[str, list[str]] = Field(default_factory=dict)
    """Agent spec -> each key of the paper's decoding it was not sent, and why."""

    def agent_shares(self) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        """Agent spec -> (the parameters set for it, the paper's decoding it may take)."""
        shares = shared_params(list(self.agents.values()), self.agent_params)
        return {
            spec: (
                {key: value for key, value in share.items() if key not in self.paper_decoding},
                {key: value for key, value in share.items() if key in self.paper_decoding},
            )
            for spec, share in shares.items()
        }


class ItemOutcome(BaseModel):
    problem: str
    attempt: int
    ok: bool
    calls: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0
    error: str | None = None


def parse_selection(selection: str) -> list[str]:
    """`1-20,31` -> ["1", ..., "20", "31"]; other ids are kept as written; a range that selects
    nothing (`5-1`) is refused."""
    ids: list[str] = []
    for part in (p.strip() for p in selection.split(",")):
        match = RANGE.match(part)
        if match and int(match.group(1)) > int(match.group(2)):
            low, high = match.group(2), match.group(1)
            raise DatasetError(f"{part} is an empty range: it counts up, from the smaller id ({low}-{high})")
        ids += (
            [str(n) for n in range(int(match.group(1)), int(match.group(2)) + 1)]
            if match
            else [part]
            if part
            else []
        )
    if not ids:
        raise DatasetError(f"{selection!r} selects no problem")
    return ids


def why_unusable(errors: Sequence[DatasetError]) -> str:
    """Each reason problems are unusable, once, with the problems it holds for (a malformed rules
    file is one reason for them all)."""
    by_reason: dict[str, list[str]] = {}
    for error in errors:
        reason = f"file {error.path}: {error.reason}" if error.path else error.reason
        by_reason.setdefault(reason, []).append(str(error.problem_id))
    return "; ".join(f"{_problems(ids)}: {reason}" for reason, ids in by_reason.items())


def _problems(ids: Sequence[str], shown: int = 10) -> str:
    listed = ", ".join(ids[:shown]) + (f", ... ({len(ids)} in all)" if len(ids) > shown else "")
    return f"problem{'s' if len(ids) > 1 else ''} {listed}"


def config_differences(stored: RunConfig, requested: RunConfig) -> list[str]:
    """The settings a resume request would change, named."""
    old, new = stored.model_dump(), requested.model_dump()
    return [f"{key}: {old[key]!r} -> {new[key]!r}" for key in old if old[key] != new[key]]


class Runner:
    def __init__(
        self,
        config: RunConfig,
        store: ResultsStore,
        home: Path | None = None,
        cache: ReplyCache | None = None,
    ) -> None:
        """`cache`: where the agents keep replies (None: the workspace's file; a Ray worker's is the
        run's cache actor)."""
        self.config = config
        self.cache = cache
        self.store = store
        self.home = workspace_home(home)
        self.info = get_strategy(config.strategy)
        self.dataset: Dataset = open_dataset(
            config.dataset, Path(config.data_dir) if config.data_dir else None, config.dataset_options
        )
        # summaries, kept between runs while the dataset is unchanged: each problem is loaded again
        # as its item starts
        scan, self._survey_keeping = survey_kept_later(self.dataset, self.home / SURVEYS)
        self.skipped: list[DatasetError] = scan.errors
        labels = self.dataset.label_table() if self.info.reads_label_table else None
        self.context = DatasetContext.of(scan.problems, labels)
        excluded = sorted(
            {self.dataset.resolve_id(problem_id) for problem_id in config.excluded}, key=natural_key
        )
        self.config = config.model_copy(update={"excluded": excluded})
        self.problems = self._select(scan)
        if config.sample is not None and config.problems is None:
            self.problems = draw(self.problems, config.sample)
            self.config = self.config.model_copy(update={"problems": [p.id for p in self.problems]})
        self.options = self.info.parse_options(config.strategy_options)
        """The strategy's options, parsed once for the whole run."""
        self.reused = {
            option: self._reusable(option, key, role, config.strategy_options[option])
            for option, (key, role) in self.info.reuses.items()
            if option in config.strategy_options and key != WHOLE_ANSWERS
        }
        self.members = {
            option: {run: self._member_answers(run) for run in config.strategy_options[option].split(",")}
            for option, (key, _) in self.info.reuses.items()
            if option in config.strategy_options and key == WHOLE_ANSWERS
        }
        """Per option naming member runs: each run's answers, by (problem, attempt)."""

    def _reusable(self, option: str, key: str, role: str, run: str) -> dict[tuple[str, int], Reused]:
        """`key` of every answer of the earlier run `run`, by (problem, attempt), and who wrote it."""
        run_id = self.store.resolve_run(run)
        agents = self.store.run_config(run_id)["agents"]
        agent = agents.get(role) or next(iter(agents.values()))
        found = {
            (problem, attempt): Reused(answer.details[key], run_id, agent)
            for problem, attempt, answer in self.store.answer_records(run_id)
            if key in answer.details
        }
        if not found:
            raise StrategyError(f"-S {option}={run}: run {run_id} holds no answers with {key!r} to reuse")
        return found

    def _member_answers(self, runs: str) -> dict[tuple[str, int], MemberAnswer]:
        """A member's answers as a mixture reads them (its runs joined with `+`, a later one's
        answer standing for an earlier one's): what it answered and what that cost."""
        found: dict[tuple[str, int], MemberAnswer] = {}
        label = ""
        for run in runs.split("+"):
            run_id = self.store.resolve_run(run)
            config = self.store.run_config(run_id)
            label = label or f"{config['strategy']} · {model_label(config)}"
            for problem, attempt, answer in self.store.answer_records(run_id):
                found[(problem, attempt)] = MemberAnswer(
                    run=run_id,
                    label=label,
                    sides=dict(answer.sides or {}),
                    correct=answer.correct,
                    cost_usd=answer.cost_usd,
                    text=answer.text,
                )
        return found

    def reused_for(self, problem: BongardProblem | ProblemSummary, attempt: int) -> dict[str, Reused]:
        """Each earlier run's result for this problem (its attempt's, else its first), by the
        option that named the run; passed beside the options, which keep the run's id. An option
        naming member runs gets every member's answer, in the order named."""
        reused: dict[str, Reused] = {}
        for option, tables in self.members.items():
            answers = []
            for run_id, table in tables.items():
                member = table.get((problem.key, attempt)) or table.get((problem.key, 0))
                if member is None:
                    raise StrategyError(
                        f"-S {option}: member run {run_id} has no answer for {problem.key} "
                        "(run it there first)"
                    )
                answers.append(member)
            reused[option] = Reused(answers, ",".join(tables), "members")
        for option, found in self.reused.items():
            value = found.get((problem.key, attempt)) or found.get((problem.key, 0))
            if value is None:
                raise StrategyError(
                    f"-S {option}: run {self.config.strategy_options[option]} has no answer for {problem.key}"
                )
            reused[option] = value
        return reused

    def _select(self, scan: ScanResult[ProblemSummary]) -> list[ProblemSummary]:
        """The run's problems, less the excluded ones; an unusable one asked for by id, or none at
        all, is refused with the reasons (the run is not stored)."""
        name = self.dataset.name
        if self.config.problems is None:
            if not scan.problems:
                raise DatasetError(
                    f"no usable problem: {why_unusable(scan.errors) or 'it has none'}", dataset=name
                )
            wanted = [p.id for p in scan.problems]
        else:
            wanted = [self.dataset.resolve_id(problem_id) for problem_id in self.config.problems]
            if strays := [problem_id for problem_id in self.config.excluded if problem_id not in wanted]:
                raise DatasetError(
                    f"--exclude {','.join(strays)}: not among the run's problems", dataset=name
                )
        chosen = [problem_id for problem_id in wanted if problem_id not in self.config.excluded]
        by_id = {p.id: p for p in scan.problems}
        if missing := [problem_id for problem_id in chosen if problem_id not in by_id]:
            errors = [error for error in scan.errors if error.problem_id in missing]
            raise DatasetError(f"cannot run {why_unusable(errors)}", dataset=name)
        if not chosen:
            raise DatasetError("every problem of the run is excluded: nothing to run", dataset=name)
        return [by_id[problem_id] for problem_id in chosen]

    def excluded_keys(self) -> list[str]:
        """The items' problem keys (`dataset/id`) of the excluded problems."""
        return [f"{self.dataset.name}/{problem_id}" for problem_id in self.config.excluded]

    def check_files(self) -> None:
        """Open, before the run is stored, the workspace files it will write: its checkpoints, and
        the reply cache unless `-M cache=false`; a corrupt, locked or read-only file is refused in
        one line naming it, instead of being met once the run exists."""
        if self.cache is None and self.config.agent_params.get("cache", True) is not False:
            ResponseCache(self.home / CACHE_FILE).close()

        async def touch_checkpoints() -> None:
            async with open_checkpoints(self.home):
                pass

        asyncio.run(touch_checkpoints())

    @functools.cached_property
    def agents(self) -> dict[str, ManagedAgent]:
        """The run's agents by role, built once; one that sets no concurrency of its own follows the
        run's, not its provider's default."""
        shares = self.config.agent_shares()
        built: dict[str, ManagedAgent] = {}
        for role, spec in self.config.agents.items():
            same = next((agent for agent in built.values() if agent.spec == spec), None)
            chosen, paper = shares[spec]
            built[role] = same or resolve_agent(
                spec,
                chosen,
                config=self.config.agent_config or None,
                cache=self.cache,
                home=self.home,
                defaults=paper,
            )
            built[role].run_concurrency = self.config.concurrency
            built[role].shares_context = self.sends_context_again
        return built

    @functools.cached_property
    def sends_context_again(self) -> bool:
        """Whether a problem's context goes out more than once: several attempts, or a strategy that
        makes several calls a problem (told from the first problem; unstated counts as several)."""
        if self.config.attempts > 1 or not self.problems:
            return self.config.attempts > 1
        try:
            first = self.dataset.load(self.problems[0].id)
        except DatasetError:
            return True  # its item will fail and say why; marking costs the others a cache write
        calls = self.info.calls_for(first, self.config.strategy_options)
        return calls is None or calls > 1

    def learned(self) -> list[str]:
        """What this process's agents learned their APIs refuse (`agents.learned_rules`), each once;
        none where no agent was built (read from the cached property, never building one)."""
        built: dict[str, ManagedAgent] = self.__dict__.get("agents", {})
        return list(dict.fromkeys(note for agent in built.values() for note in agent.learned))

    def in_flight(self) -> InFlight:
        """How many calls the run can have in flight, and which limit binds (builds the agents)."""
        gates = ((agent.endpoint, agent.rate_limits) for agent in self.agents.values())
        return in_flight(self.config.concurrency, gates)

    def pending(self, run_id: str, retry_errors: bool) -> list[tuple[ProblemSummary, int]]:
        skipped = self.store.finished_items(run_id)
        if not retry_errors:
            skipped |= self.store.failed_items(run_id)
        return [
            (problem, attempt)
            for problem in self.problems
            for attempt in range(self.config.attempts)
            if (problem.key, attempt) not in skipped
        ]

    async def run(
        self,
        run_id: str,
        *,
        retry_errors: bool = False,
        on_item: Callable[[ItemOutcome], None] | None = None,
        max_failures: int = DEFAULT_MAX_FAILURES,
        items: Sequence[tuple[ProblemSummary, int]] | None = None,
    ) -> None:
        """Solve every pending item (`items`, when the caller already listed them); `EndpointDown`
        when the first `max_failures` requests to an endpoint all fail for its own fault (0: never
        stop), the items in flight kept for a resume."""
        breaker = CircuitBreaker(max_failures)
        for agent in self.agents.values():
            agent.breaker = breaker
        runtime = SolveRuntime(
            agents=self.agents,
            render_dir=self.home / "renders",
            variant=self.config.variant,
            call_slots=asyncio.Semaphore(self.config.concurrency),
            kept=KeptResults(self.home / "kept"),
        )
        work: Iterator[tuple[ProblemSummary, int]] = iter(
            self.pending(run_id, retry_errors) if items is None else items
        )
        with self.held(run_id, runtime.prompts), frozen_heap():
            async with open_checkpoints(self.home) as checkpoints:

                async def worker() -> None:
                    for problem, attempt in work:
                        outcome = await self._solve_one(run_id, runtime, checkpoints, problem, attempt)
                        if on_item is not None:
                            on_item(outcome)

                try:  # a worker's error (a dead endpoint, a full disk) stops the others at once
                    async with asyncio.TaskGroup() as workers:
                        for _ in range(self.config.concurrency):
                            workers.create_task(worker())
                except ExceptionGroup as stopped:
                    raise stopped.exceptions[0] from None
        if self._survey_keeping is not None:  # kept by now (it began with the run), for what reads it next
            self._survey_keeping.join()

    async def _solve_one(
        self,
        run_id: str,
        runtime: SolveRuntime,
        checkpoints: Checkpoints,
        problem: ProblemSummary,
        attempt: int,
    ) -> ItemOutcome:
        # the item its calls belong to, for a batch API's ledger (`agents.batch_ledger`)
        BATCH_SCOPE.set(BatchScope(self.home / LEDGER_FILE, f"{run_id}/{problem.key}/{attempt}"))
        solved = await self.solve_item(run_id, runtime, checkpoints, problem, attempt)
        outcome = self.save_solved(run_id, solved)
        if solved.answer is not None:
            await checkpoints.adelete_thread(item_thread(run_id, problem.key, attempt))
        return outcome

    async def solve_item(
        self,
        run_id: str,
        runtime: SolveRuntime,
        checkpoints: Checkpoints,
        problem: ProblemSummary,
        attempt: int,
    ) -> SolvedItem:
        """One item solved but not stored, so whoever stores it may run elsewhere (the Ray driver,
        `graphs.cluster.executor`); its thread is kept until the item is stored. Its problem is loaded
        now: a run holds only summaries, so its memory does not grow with the dataset."""
        thread = item_thread(run_id, problem.key, attempt)
        try:
            with keeping_paid_calls() as paid:
                reused = self.reused_for(problem, attempt)
                answer = await solve(
                    self.config.strategy,
                    self.dataset.load(problem.id),
                    runtime,
                    context=self.context,
                    seed=self.config.seed + attempt,
                    options=self.options,
                    reused=reused,
                    checkpoints=checkpoints,
                    thread=thread,
                )
        except (AgentCallError, StrategyError, DatasetError) as error:
            # The thread is kept: retrying the item reuses the calls that had finished. The calls it
            # paid for are stored with the failure, so the run's cost counts them.
            if isinstance(error, DatasetError):  # a panel that does not decode: name where it is
                error = error.located(dataset=problem.dataset, problem_id=problem.id)
            trace = paid_trace(await checkpointed_trace(checkpoints, self.config.strategy, thread), paid)
            return SolvedItem(
                problem=problem.key,
                attempt=attempt,
                error=str(error),
                failed_trace=trace,
                retryable=not isinstance(error, StrategyError) and getattr(error, "retryable", True),
            )
        return SolvedItem(problem=problem.key, attempt=attempt, answer=answer)

    def save_solved(self, run_id: str, solved: SolvedItem) -> ItemOutcome:
        """Store a solved item with its calls, in one transaction; what it cost."""
        self.store.save_item(
            run_id,
            solved.problem,
            solved.attempt,
            solved.answer,
            solved.error,
            solved.failed_trace,
            retryable=solved.retryable,
        )
        trace = solved.answer.trace if solved.answer is not None else solved.failed_trace
        return ItemOutcome(
            problem=solved.problem,
            attempt=solved.attempt,
            ok=solved.answer is not None,
            error=solved.error,
            **spent(trace),
        )

    def loaded(self) -> Iterator[BongardProblem]:
        """The run's problems, loaded one at a time (one that has become unusable since the run
        started is left out: its item fails with the error, named)."""
        for problem in self.problems:
            try:
                loaded = self.dataset.load(problem.id)
            except DatasetError:
                continue
            yield loaded

    @contextmanager
    def held(self, run_id: str, prompts: PromptLibrary) -> Iterator[None]:
        """The run held by this process for one pass over its pending items, the pass's provenance
        recorded with the prompts it used; released on the way out, finished only if the block ended
        normally (Ctrl-C or an error leave it resumable; a SIGKILL leaves the owner set, and
        `process_alive` finds it gone)."""
        self.store.hold_run(run_id, planned=len(self.problems) * self.config.attempts)
        sessions = [*self.store.provenance(run_id), session_record(prompts)]
        self.store.save_provenance(run_id, sessions)
        finished = False
        # Hashing every image of a 5,000-problem run took 1.9 s before its first call (issue 34):
        # it runs beside the calls instead, reads only the images changed since it last hashed them,
        # and lands in the record when the pass ends.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fingerprint") as hashing:
            fingerprint = hashing.submit(dataset_fingerprint, self.loaded(), self.home / DIGESTS_FILE)
            try:
                yield
                finished = True
            finally:
                sessions[-1]["prompts"] = dict(sorted(prompts.used.items()))
                sessions[-1]["dataset"] = fingerprint.result()
                if learned := self.learned():
                    sessions[-1]["learned"] = learned
                self.store.save_provenance(run_id, sessions)
                self.store.release_run(run_id, finished=finished)


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Everything allocated so far (the toolkit's and its libraries' modules, the run's agents and
    summaries) left out of the garbage collector's passes until the block ends: it lives as long
    as the run, and each full pass walked all of it (0.45 s of a 7 s run over the 100 classic
    problems). Unfrozen at the end, so what became garbage meanwhile is collected after all."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class SolvedItem(BaseModel):
    """An item's result on its way to the store: its answer, or its error and the calls it paid for."""

    problem: str
    attempt: int
    answer: Answer | None = None
    error: str | None = None
    failed_trace: list[CallTrace] = Field(default_factory=list)
    retryable: bool = True
    """Whether retrying can help: a call that failed may succeed later, a panel that does not decode
    once the file is fixed; an option or problem the strategy refuses fails the same way again."""


def paid_trace(checkpointed: list[CallTrace], this_pass: list[CallTrace]) -> list[CallTrace]:
    """A failed item's calls: those its checkpoint holds (earlier passes' and this one's finished
    steps) and every other call this pass made (branches that finished beside the failure, or were
    given up in flight), each once."""
    unmatched = list(checkpointed)
    extra = []
    for call in this_pass:
        if call in unmatched:
            unmatched.remove(call)
        else:
            extra.append(call)
    return checkpointed + extra


def spent(trace: Sequence[CallTrace]) -> dict[str, Any]:
    """Calls, tokens and cost of a trace (cost unknown if any call's is)."""
    costs = [call.cost_usd for call in trace]
    return {
        "calls": len(trace),
        "tokens": sum(call.input_tokens + call.output_tokens for call in trace),
        "cost_usd": None if any(cost is None for cost in costs) else float(sum(c for c in costs if c)),
    }


def check_config(config: RunConfig, *, ready: bool = True, home: Path | None = None) -> dict[str, list[str]]:
    """Refuse, in one line, a strategy option, agent parameter, missing key or missing provider
    package the run could not use, before anything is stored; else each agent spec's paper decoding
    its model cannot take, with why (for the specs that cannot take some), by its family or by what
    the workspace at `home` learned it refuses. `ready=False` (a plan): the parameters alone, no key
    or package needed."""
    info = get_strategy(config.strategy)
    info.parse_options(config.strategy_options)
    _check_text_only_roles(info, config.agents)
    check = check_agent if ready else dropped_decoding
    notes = {
        spec: check(spec, chosen, config=config.agent_config or None, defaults=paper, home=home)
        for spec, (chosen, paper) in config.agent_shares().items()
    }
    return {spec: lines for spec, lines in notes.items() if lines}


def _check_text_only_roles(info: StrategyInfo[Any], agents: dict[str, str]) -> None:
    """Refuse an agent that needs images (the perception agent) in a role whose calls show none, unless
    the same kind of agent writes the notes those calls carry: else each of its calls would fail, paid
    for by the calls before it (a describer's, say)."""
    for role in info.text_only_roles:
        spec, provider = agents.get(role), _provider_of(agents.get(role))
        needs = None if provider is None else get_provider(provider).needs_images
        if needs is None or (info.notes_from and _provider_of(agents.get(info.notes_from)) == provider):
            continue
        also = f", or {provider} as the --{info.notes_from} too (it reads its own notes)" * bool(
            info.notes_from
        )
        raise StrategyError(
            f"{info.name}: every {role} call is text only, and {spec} cannot answer one ({needs}): "
            f"give --{role} a language model (a local one: docs/agents.md){also}"
        )


def _provider_of(spec: str | None) -> str | None:
    return None if spec is None else split_spec(spec)[0]


def _paper_protocol(info: StrategyInfo[Any], config: RunConfig) -> PaperProtocol | None:
    """Whose protocol a new run follows, where two papers define its strategy (None: one does)."""
    if not info.protocols:
        return None
    data_dir = Path(config.data_dir) if config.data_dir else None
    dataset = open_dataset(config.dataset, data_dir, config.dataset_options)
    return info.protocol_for(info.parse_options(config.strategy_options), dataset.format_name)


def data_folder(config: RunConfig) -> str:
    """The folder a run's dataset is found in, as an absolute path: the default one (`$BONGARD_DATA`,
    `./data`, `../shared/data`...) depends on where a command runs, so a run stored without it was
    found by `run` and lost by a later `export` or `show` started elsewhere."""
    return str((Path(config.data_dir) if config.data_dir else default_data_dir()).expanduser().resolve())


def start_run(config: RunConfig, store: ResultsStore, home: Path | None = None) -> tuple[str, Runner]:
    """A new stored run: its settings checked, its data folder made absolute, the paper's decoding
    filled in under `-M`, so the stored configuration says what every request was sent with."""
    runner = prepare_run(config, store, home)
    return store_run(runner), runner


def store_run(runner: Runner) -> str:
    """Store a prepared run (`prepare_run`), so it can be run and resumed; its id."""
    return runner.store.create_run(runner.config.model_dump(mode="json"), toolkit_version() or "unknown")


def prepare_run(
    config: RunConfig, store: ResultsStore, home: Path | None = None, *, ready: bool = True
) -> Runner:
    """The runner a new run would have, its configuration as it would be stored, nothing stored
    (`ready=False`: no key or provider package needed, for a plan)."""
    info = get_strategy(config.strategy)
    config = config.model_copy(update={"data_dir": data_folder(config)})
    decoding = info.decoding
    if (chosen := _paper_protocol(info, config)) is not None:  # fixed here, recorded with the options
        decoding = chosen.decoding
        config = config.model_copy(
            update={"strategy_options": {**config.strategy_options, "protocol": chosen.name}}
        )
    paper = [key for key in decoding if key not in config.agent_params]
    merged = {**decoding, **config.agent_params}
    config = config.model_copy(update={"agent_params": merged, "paper_decoding": paper})
    config = config.model_copy(update={"decoding_dropped": check_config(config, ready=ready, home=home)})
    reuses = info.reuses
    pinned = {k: _pinned_runs(store, v) if k in reuses else v for k, v in config.strategy_options.items()}
    config = config.model_copy(update={"strategy_options": pinned})  # `latest` must not move on resume
    if config.sample is not None and config.problems is not None:
        raise StrategyError("--sample draws from the whole dataset: give --problems or --sample, not both")
    runner = Runner(config, store, home)  # a sample is drawn here; the run stores the drawn ids
    if runner.members and config.strategy_options.get("complete", "true") != "false":
        runner = Runner(_completed_members(runner, store, home), store, home)
    _check_test_images(runner)
    if ready:
        runner.check_files()
    return runner


def _check_test_images(runner: Runner) -> None:
    """A strategy that places held-out test images, on a dataset that holds none, is refused before
    the run is stored (every item would fail): told by the first problem selected."""
    if not runner.info.needs_test_panels or not runner.problems:
        return
    try:
        first = runner.dataset.load(runner.problems[0].id)
    except DatasetError:
        return  # that item fails on its own, named
    if not first.test_panels:
        raise no_test_images(runner.info.name, first)


def _pinned_runs(store: ResultsStore, runs: str) -> str:
    """Run names (`latest`, an alias; several with `,`, one member's runs joined with `+`) as ids."""
    return ",".join(
        "+".join(store.resolve_run(one) for one in member.split("+")) for member in runs.split(",")
    )


def _completed_members(runner: Runner, store: ResultsStore, home: Path | None) -> RunConfig:
    """Each member whose runs lack some of the mixture's problems is run on those, as a new run of
    its first run's settings (so it pays only for what is missing), named beside it (`RUN+RUN`)."""
    options = dict(runner.config.strategy_options)
    for option, tables in runner.members.items():
        named = []
        for member, table in tables.items():
            answered = {problem for problem, _ in table}
            missing = [problem.id for problem in runner.problems if problem.key not in answered]
            if missing:
                settings = RunConfig.model_validate(store.run_config(member.split("+")[0]))
                filling = settings.model_copy(update={"problems": missing, "sample": None, "excluded": []})
                try:
                    filled, filler = start_run(filling, store, home)
                except (BongardError, ValueError) as error:
                    raise StrategyError(
                        f"running member {member} on the {len(missing)} problem(s) it lacks: {error} "
                        "(-S complete=false fails them instead)"
                    ) from None
                asyncio.run(filler.run(filled))
                member = f"{member}+{filled}"
            named.append(member)
        options[option] = ",".join(named)
    return runner.config.model_copy(update={"strategy_options": options})


def resume_run(
    run: str,
    store: ResultsStore,
    requested: RunConfig | None = None,
    home: Path | None = None,
    exclude: Sequence[str] = (),
) -> tuple[str, Runner]:
    """The stored run and its runner; a differing requested configuration is refused, naming the changes.

    `exclude` drops problems from the run for good: recorded in its configuration, their stored
    items leave its counts (the calls they paid for stay in its cost), so it can be complete without them.
    """
    run_id = store.resolve_run(run, resumable=True)  # never a run another live process is running
    stored = RunConfig.model_validate(store.run_config(run_id))
    if get_strategy(stored.strategy).protocols and "protocol" not in stored.strategy_options:
        raise StoreError(
            f"run {run_id} was started before {stored.strategy} recorded the paper protocol it follows; "
            "its remaining items would be asked another way: start a new run"
        )
    if requested is not None and (differences := config_differences(stored, requested)):
        raise StoreError(
            f"run {run_id} was started with other settings; a resume keeps them: {'; '.join(differences)}"
        )
    runner = Runner(stored.model_copy(update={"excluded": [*stored.excluded, *exclude]}), store, home)
    runner.check_files()
    if exclude:
        store.exclude_problems(run_id, runner.config.model_dump(mode="json"), runner.excluded_keys())
    return run_id, runner
