"""A stored run as an inspect_ai eval log, so `inspect view` (and any tool that reads its logs)
opens our runs beside a team's other evaluations.

The mapping: a run is an eval (its strategy the task, its reasoner the model, attempts the epochs,
its status the log's); an item (problem, attempt) is a sample whose messages are every call's
prompt and reply in order, whose output is the final answer, whose target is the true concept (or
the true sides of the test images) and whose score `solved` is C or I as `compare` counts it. An
unjudged free-form answer has no score, a failed item carries its error; each sample's metadata
says its outcome (a refusal, a block or a cut-off counted apart, as in `compare`) and its output's
stop reason says it in inspect's words. Each call's role, agent, conversation, images, tokens,
cost (unknown: none), stop, latency and cache hit stay in the message's metadata.

Issue 32: a prompt carries the images its call sent, as image content (the sheet or the panel as
the run's variant draws it, at most `EXPORT_IMAGE_SIDE` pixels on a side); each call is also a model
event, its input the conversation so far, so inspect's transcript shows the calls; the roles
(reasoner, describer, author, and the counting judging's judges) are the log's model roles; samples
come in problem number order (1, 2, 10), as inspect sorts their ids. The inspect_ai package is
needed only here (extra `inspect`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict, deque
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from datasets_io.errors import BongardError
from datasets_io.images import natural_key
from datasets_io.problem import own_id
from datasets_io.render import VARIANTS, Variant
from graphs.reports.export_images import (
    DRAWN_AHEAD,
    DrawingJob,
    DrawnImages,
    dataset_settings,
    draw,
    drawing_pool,
    opened_dataset,
)
from results.report import items_frame
from results.report_rows import UNSOLVED_COLUMNS, run_result
from results.run_compatibility import model_label
from results.store import Judging, ResultsStore

if TYPE_CHECKING:
    from inspect_ai.event import Event
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ModelConfig,
        ModelOutput,
        ModelUsage,
        StopReason,
    )

    from datasets_io.records import Answer, CallTrace
    from judges.verdict import Verdict

INSPECT_STOP_REASONS: dict[str, Literal["max_tokens", "content_filter"]] = {
    "cut off": "max_tokens", "blocked": "content_filter", "refused": "content_filter",
}  # fmt: skip
"""An item's stopped outcome as inspect's stop reason (it names a refusal a content filter, as its
own Anthropic provider does)."""
STATUS = {
    "complete": "success",
    "partial": "error",
    "failed": "error",
    "interrupted": "cancelled",
    "running": "started",
}
"""Our run status -> inspect's eval status."""
DIGITS = re.compile(r"\d+")
SAMPLE_ID_DIGITS = 6


class MissingInspect(BongardError, ImportError):
    """inspect_ai is not installed."""


def _iso(timestamp: float | None) -> str:
    return datetime.fromtimestamp(timestamp or 0, UTC).isoformat()


LOG_FORMATS = ("eval", "json")
"""inspect's two log formats: `.eval` (a zip, one member per sample) and `.json` (one document)."""
FLUSH_EVERY = 500
"""Samples buffered before the `.eval` writer flushes them: inspect's recorder compares each new sample
with every buffered one, so a log of 5,000 written in one buffer took 34 s; each flush copies the log
so far (with single-threaded zstd: 2.3 s in buffers of 500, 2.7 s of 250, 2.9 s of 1,000)."""
ZSTD_THREADS = 0
"""Threads of the zstd compressor inspect makes for each member of a `.eval` zip: its own 12 start a
thread pool per member, 0.6 ms each on a 2-core machine (3 s of 5,000 samples) for members of a few
kB, which one thread compresses in 0.02 ms."""


def export_run(
    store: ResultsStore,
    run_id: str,
    out: Path,
    *,
    images: bool = True,
    log_format: str = "eval",
    processes: bool = False,
) -> Path:
    """Write `out/<run>.<eval|json>` and return its path; without `images`, prompts carry only their
    text. `processes`: a large run's images may be drawn in spawned processes, which import the
    caller's main module again (`graphs.reports.export_images.drawing_pool`)."""
    try:
        from inspect_ai.log import write_eval_log
    except ImportError:
        raise MissingInspect("exporting to inspect needs inspect_ai: pip install -e '.[inspect]'") from None
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{run_id}.{log_format}"
    header, samples = logged_run(store, run_id, images=images, processes=processes)
    if log_format == "json":  # one document: every sample in memory
        write_eval_log(header.model_copy(update={"samples": list(samples)}), path, format="json")
    else:
        asyncio.run(_write_eval(header, samples, path))
    return path


async def _write_eval(header: EvalLog, samples: Iterator[EvalSample], path: Path) -> None:
    """The `.eval` log through inspect's recorder, each sample as it is made, flushed every
    `FLUSH_EVERY`, so no more than that many are held. Samples go in as built: their images are
    attachments already (`DrawnImages`), which is what inspect's `condense_sample` would make of
    them (2 s of 5,000 samples spent walking every message)."""
    from inspect_ai.log._recorders.eval import EvalRecorder  # flushing on the way is not public

    recorder = EvalRecorder(str(path.parent))
    with _zstd_threads(ZSTD_THREADS):
        await recorder.log_init(header.eval, str(path), clean=True)
        await recorder.log_start(header.eval, header.plan)
        for number, sample in enumerate(samples, 1):
            await recorder.log_sample(header.eval, sample)
            if number % FLUSH_EVERY == 0:
                await recorder.flush(header.eval)
        await recorder.log_finish(
            header.eval, header.status, header.stats, header.results, header.reductions, header.error
        )


@contextmanager
def _zstd_threads(threads: int) -> Iterator[None]:
    """Inspect's zstd thread count set for the block (a private constant, read at each member: left
    alone where a later inspect no longer has it)."""
    from inspect_ai._util import zipfile as inspect_zipfile

    if not hasattr(inspect_zipfile, "_ZSTD_THREADS"):
        yield
        return
    before = inspect_zipfile._ZSTD_THREADS
    inspect_zipfile._ZSTD_THREADS = threads
    try:
        yield
    finally:
        inspect_zipfile._ZSTD_THREADS = before


@dataclass(frozen=True)
class LoggedItem:
    """What one sample is made of, read from the store before any image is drawn."""

    row: Any
    """Its `items_frame` row (status, solved, scored, outcome)."""
    answer: Answer | None
    trace: list[CallTrace]
    error: str | None
    decision: tuple[bool, list[Verdict]] | None
    """The counted judging's on it (None unjudged)."""
    job: DrawingJob
    """Its images and concept, for a drawing worker."""


def logged_run(
    store: ResultsStore, run_id: str, *, images: bool = True, processes: bool = False
) -> tuple[EvalLog, Iterator[EvalSample]]:
    """The run's eval log without its samples, and its samples in problem order, made as they are
    iterated, with the images of the next `DRAWN_AHEAD` items drawn meanwhile
    (`graphs.reports.export_images`)."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
        EvalStats,
    )

    summary = store.summary(run_id)
    config = summary.config
    opened_dataset.cache_clear()  # opened afresh for each export, as its files may have changed since
    opened_dataset(dataset_settings(config))  # a dataset gone since the run: said before a file is written
    items = _logged_items(store, run_id, config, drawn=images)
    row = run_result(store, run_id) or {"n": 0, "problems": 0} | dict.fromkeys(UNSOLVED_COLUMNS.values(), 0)
    metrics = {"solved": EvalMetric(name="solved", value=row["solved"] if row["n"] else float("nan"))}
    metrics["accuracy"] = EvalMetric(name="accuracy", value=row["accuracy"] if row["n"] else float("nan"))
    metrics |= {
        column: EvalMetric(name=column, value=int(row[column])) for column in UNSOLVED_COLUMNS.values()
    }
    sessions = store.provenance(run_id)
    header = EvalLog(
        status=STATUS[summary.status],
        eval=EvalSpec(
            eval_id=run_id,
            run_id=run_id,
            created=_iso(summary.created_at),
            task=f"bongard/{config['strategy']}",
            task_args=config.get("strategy_options", {}),
            dataset=EvalDataset(name=config["dataset"], samples=row["problems"]),
            model=model_label(config),
            model_roles=_model_roles(config["agents"], store.judgings(run_id)),
            config=EvalConfig(epochs=int(config.get("attempts", 1))),
            packages=sessions[-1]["packages"] if sessions else {},
            metadata={"bongard_run": run_id, "config": config, "provenance": sessions},
        ),
        results=EvalResults(
            total_samples=summary.planned or summary.items,
            completed_samples=summary.done,
            scores=[
                EvalScore(
                    name="solved",
                    scorer="bongard",
                    scored_samples=summary.scored,
                    unscored_samples=summary.items - summary.scored,
                    metrics=metrics,
                )
            ],
        ),
        stats=EvalStats(
            started_at=_iso(summary.created_at),
            completed_at=_iso(summary.finished_at) if summary.finished_at else "",
            model_usage=_usage([call for item in items for call in item.trace]),
        ),
    )
    return header, _samples(items, processes)


def _logged_items(
    store: ResultsStore, run_id: str, config: dict[str, Any], *, drawn: bool
) -> list[LoggedItem]:
    """Every item of the run in problem number order (1, 2, 10), its calls from its stored answer."""
    answers = {(p, a): answer for p, a, answer in store.answer_records(run_id)}
    errors = store.item_errors(run_id)
    judged = bool(store.judgings(run_id))
    variant = config.get("variant", "plain")
    drawn_as: Variant = variant if variant in VARIANTS else "plain"
    rows = items_frame(store, [run_id]).itertuples(index=False)
    items = []
    settings = dataset_settings(config)
    for row in sorted(rows, key=lambda row: (natural_key(str(row.problem)), int(row.attempt))):
        item = (str(row.problem), int(row.attempt))
        answer = answers.get(item)
        trace = answer.trace if answer is not None else store.item_calls(run_id, *item)
        dataset_id = own_id(item[0], config["dataset"])  # the dataset's own id, as the run stored it
        sent = tuple(sorted({tuple(refs) for call in trace for refs in call.images if refs}))  # attempts
        # that show the same images in another order (test images shuffled) share a drawing
        items.append(
            LoggedItem(
                row=row,
                answer=answer,
                trace=trace,
                error=errors.get(item),
                decision=store.item_decision(run_id, *item) if judged and row.scored else None,
                job=DrawingJob(settings, dataset_id, drawn_as, sent if drawn else (), needs_concept(answer)),
            )
        )
    return items


def _samples(items: list[LoggedItem], processes: bool) -> Iterator[EvalSample]:
    """Each item's sample, in order, its images drawn `DRAWN_AHEAD` items ahead by a drawing pool.
    The attempts of a problem come together and send the same images: they share one drawing
    (`--attempts 3` drew each sheet three times). The items are taken out of `items` as they go, so
    what a written sample drew is not held on to."""
    waiting = deque(items)
    items.clear()
    ahead: deque[tuple[LoggedItem, Future[DrawnImages]]] = deque()
    jobs = list(dict.fromkeys(item.job for item in waiting if item.job.needed))
    last: tuple[DrawingJob, Future[DrawnImages]] | None = None
    with drawing_pool(len(jobs), any(job.images for job in jobs), processes) as pool:
        while waiting or ahead:
            while waiting and len(ahead) <= DRAWN_AHEAD:
                coming = waiting.popleft()
                if not coming.job.needed:
                    ahead.append((coming, _nothing()))
                    continue
                if last is None or last[0] != coming.job:
                    last = (coming.job, pool.submit(draw, coming.job))
                ahead.append((coming, last[1]))
            item, drawing = ahead.popleft()
            drawn = drawing.result()
            yield _sample(item.row, item.trace, item.answer, item.error, drawn, item.decision)


def _nothing() -> Future[DrawnImages]:
    """An item with neither images nor a concept to read: nothing drawn."""
    done: Future[DrawnImages] = Future()
    done.set_result(DrawnImages())
    return done


def needs_concept(answer: Answer | None) -> bool:
    """Whether the sample's target is the problem's concept (the true sides where it has them)."""
    return not (answer is not None and answer.expected.get("sides"))


def _sample(
    row: Any,
    calls: list[CallTrace],
    answer: Answer | None,
    error: str | None,
    drawn: DrawnImages,
    decision: tuple[bool, list[Verdict]] | None,
) -> EvalSample:
    """One item as a sample; `row` is its `items_frame` row (status, solved, scored), `decision` the
    counted judging's on it (None unjudged)."""
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatMessageAssistant
    from inspect_ai.scorer import Score

    problem, attempt = str(row.problem), int(row.attempt)
    key = f"{sample_id(problem)}#{attempt + 1}"  # the sample's id and epoch, as inspect names it
    messages, events = _conversations(calls, drawn, key)
    expected = answer.expected if answer is not None else {}
    if expected.get("sides"):
        target = json.dumps(expected["sides"])
    else:
        concept = drawn.concept
        target = f"Left: {concept.left} / Right: {concept.stated_right}" if concept is not None else ""
    scores = {}
    if row.scored and row.status != "failed":
        explanation = "; ".join(f"{v.judge}: {v.label}" for v in decision[1]) if decision else None
        scores["solved"] = Score(
            value="C" if row.solved else "I", answer=answer.text if answer else None, explanation=explanation
        )
    return EvalSample(
        id=sample_id(problem),
        epoch=attempt + 1,
        input=calls[0].prompt if calls else problem,
        target=target,
        messages=messages,
        events=events,
        output=_output(
            calls[-1].agent if calls else "",
            ChatMessageAssistant(
                id=f"{key}/answer", content=answer.text if answer else "", source="generate"
            ),
            INSPECT_STOP_REASONS.get(str(row.outcome), "stop"),
        ),
        scores=scores,
        model_usage=_usage(calls),
        role_usage=_usage(calls, by_role=True),
        attachments=drawn.attachments,
        metadata={
            "problem": problem,
            "attempt": attempt,
            "parse_status": answer.parse_status if answer else None,
            "outcome": str(row.outcome),
        },
        error=EvalError(message=error, traceback="", traceback_ansi="") if error else None,
    )


def sample_id(problem: str) -> int | str:
    """A problem's sample id, in the order inspect sorts ids (strings as written, numbers as numbers):
    a numbered problem is its number (the dataset is the log's), any other id its own with each run
    of digits written to six places, so `test-10` follows `test-2`; `metadata.problem` keeps the key."""
    own = problem.split("/", 1)[-1]
    if own.isascii() and own.isdigit():
        return int(own)
    return DIGITS.sub(lambda digits: digits.group().zfill(SAMPLE_ID_DIGITS), own)


def _conversations(
    calls: list[CallTrace], drawn: DrawnImages, key: str
) -> tuple[list[ChatMessage], list[Event]]:
    """Every call's prompt (with the images drawn of those it sent) and reply, in order, and a model
    event per call whose input is its conversation so far. Each message and event is named from the
    sample's `key` and the call's place: inspect would draw a random id for each (27 % of a large
    export's time), and the same run exports the same log."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageUser,
        Content,
        ContentImage,
        ContentText,
        GenerateConfig,
    )

    messages: list[ChatMessage] = []
    events: list[Event] = []
    history: dict[str, list[ChatMessage]] = defaultdict(list)
    for number, call in enumerate(calls, 1):
        named = f"{key}/{number}"
        details = call.model_dump(exclude={"prompt", "reply", "parsed"})
        shown = [ContentImage(image=url) for refs in call.images if (url := drawn.urls.get(tuple(refs)))]
        content: list[Content] = [ContentText(text=call.prompt), *shown]
        asked = ChatMessageUser(id=f"{named}/prompt", content=content, source="input", metadata=details)
        said = ChatMessageAssistant(
            id=f"{named}/reply", content=call.reply, model=call.agent, source="generate", metadata=details
        )
        generated = ChatMessageAssistant(
            id=f"{named}/output", content=call.reply, model=call.agent, source="generate"
        )
        output = _output(call.agent, generated, "stop")
        output.usage = _usage([call])[call.agent]
        events.append(
            ModelEvent(
                uuid=f"{named}/event",
                model=call.agent,
                role=call.role,
                input=[*history[call.conversation], asked],
                tools=[],
                tool_choice="none",
                config=GenerateConfig(),
                output=output,
                cache="read" if call.cache_hit else None,
                working_time=call.latency_s,
            )
        )
        history[call.conversation] += [asked, said]
        messages += [asked, said]
    return messages, events


def _output(model: str, said: ChatMessageAssistant, stop: StopReason) -> ModelOutput:
    """`ModelOutput.from_content` with the message given, not one made with a random id."""
    from inspect_ai.model import ChatCompletionChoice, ModelOutput

    return ModelOutput(model=model, choices=[ChatCompletionChoice(message=said, stop_reason=stop)])


def _model_roles(agents: dict[str, str], judgings: list[Judging]) -> dict[str, ModelConfig]:
    """The run's roles, and the judges of the judging that counts (`judge-1`, ...), by model."""
    from inspect_ai.model import ModelConfig

    roles = {role: ModelConfig(model=spec) for role, spec in sorted(agents.items())}
    if judgings:
        roles |= {f"judge-{n}": ModelConfig(model=spec) for n, spec in enumerate(judgings[-1].judges, 1)}
    return roles


def _usage(calls: list[CallTrace], *, by_role: bool = False) -> dict[str, ModelUsage]:
    """Tokens and cost per model (or per role)."""
    from inspect_ai.model import ModelUsage

    tokens: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    costs: dict[str, list[float | None]] = defaultdict(list)
    for call in calls:
        key = call.role if by_role else call.agent
        tokens[key][0] += call.input_tokens
        tokens[key][1] += call.output_tokens
        costs[key].append(call.cost_usd)
    return {  # a cost some call has no price for is unknown (None), never a sum that reads as known
        agent: ModelUsage(
            input_tokens=i,
            output_tokens=o,
            total_tokens=i + o,
            total_cost=None if None in costs[agent] else sum(c for c in costs[agent] if c is not None),
        )
        for agent, (i, o) in tokens.items()
    }
