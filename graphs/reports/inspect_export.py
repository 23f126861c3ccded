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
import gc
import json
import re
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TypeVar

from pydantic import BaseModel

from datasets_io.errors import BongardError
from datasets_io.images import natural_key
from datasets_io.problem import own_id
from datasets_io.render import VARIANTS, Variant
from datasets_io.survey_cache import SURVEYS, kept_survey
from graphs.reports.export_images import (
    DRAWN_AHEAD,
    DrawingJob,
    DrawnImages,
    dataset_settings,
    draw,
    drawing_pool,
    opened_dataset,
)
from results.report_rows import UNSOLVED_COLUMNS, ItemRow, item_rows, run_result
from results.run_compatibility import model_label
from results.store import CallTotals, Judging, ResultsStore

if TYPE_CHECKING:
    from inspect_ai.event import Event
    from inspect_ai.log import EvalLog, EvalSample, EvalSpec
    from inspect_ai.log._recorders.eval import EvalRecorder
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ModelConfig,
        ModelOutput,
        ModelUsage,
        StopReason,
    )

    from datasets_io.problem import Concept
    from datasets_io.records import Answer, CallTrace
    from judges.verdict import Verdict

Made = TypeVar("Made", bound=BaseModel)
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
"""Samples buffered before the `.eval` writer flushes them, so memory holds no more than these; each
flush reopens the zip and writes its whole directory again, so flushing more often costs more (a
5,000-item descriptive export: 9.5-9.9 s of CPU in buffers of 250, 9.0-9.4 s of 500, 9.3 s of 1,000)."""
READ_TOGETHER = 100
"""Items whose answers and calls are read by one query: few enough that an export's memory stays that
of a few items, many enough that no query is paid per item."""
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
    with _cycles_not_collected():
        try:
            import inspect_ai.log  # noqa: F401  (said before any file is written)
        except ImportError:
            raise MissingInspect(
                "exporting to inspect needs inspect_ai: pip install -e '.[inspect]'"
            ) from None
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{run_id}.{log_format}"
        header, samples = logged_run(store, run_id, images=images, processes=processes)
        if log_format == "json":
            _write_json(header, samples, path)
        else:
            asyncio.run(_write_eval(header, samples, path))
    return path


@contextmanager
def _cycles_not_collected() -> Iterator[None]:
    """Python's cycle collector paused while inspect is imported and a log is written. An export
    makes millions of small objects and next to no cycles (5,000 descriptive items: 99 objects found
    in its oldest generation), and each of the collector's passes walks every live object, the
    `.eval` writer's buffered samples included: 7.5 s of an 18.7 s export (and 0.13 s of inspect's
    1.35 s import). Reference counting still frees everything as it goes."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _write_json(header: EvalLog, samples: Iterator[EvalSample], path: Path) -> None:
    """The `.json` log as inspect's `write_eval_log` writes it (one document, indented by 2), each
    sample serialized as it is made, so memory holds one sample, not the run (2.6 GB for 5,000
    descriptive items). inspect sorts the samples by epoch, then id; here they stay in the order made
    (problem number order, a problem's attempts together), which is the same for one attempt."""
    from inspect_ai._util.json import jsonable_python, to_json_safe

    document = jsonable_python(header)  # without samples (None is left out)
    fields = list(type(header).model_fields)
    keys = list(document)
    later = (n for n, key in enumerate(keys) if key in fields and fields.index(key) > fields.index("samples"))
    keys.insert(next(later, len(keys)), "samples")  # where inspect's field order puts them
    with path.open("wb") as out:
        out.write(b"{")
        for number, key in enumerate(keys):
            out.write((b"," if number else b"") + b"\n  " + json.dumps(key).encode() + b": ")
            if key == "samples":
                _write_samples(out, samples)
            else:
                out.write(_nested(to_json_safe(document[key]), 1))
        out.write(b"\n}")


def _write_samples(out: BinaryIO, samples: Iterator[EvalSample]) -> None:
    """The samples' list at the document's first level, one sample at a time."""
    from inspect_ai._util.json import to_json_safe

    out.write(b"[")
    written = False
    for sample in samples:
        out.write((b"," if written else b"") + b"\n    " + _nested(to_json_safe(sample), 2))
        written = True
    out.write(b"\n  ]" if written else b"]")


def _nested(dumped: bytes, depth: int) -> bytes:
    """JSON indented by 2 as if written `depth` levels in (a string holds no raw line break)."""
    return dumped.replace(b"\n", b"\n" + b"  " * depth)


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
        buffer = _sample_buffer(recorder, header.eval)
        for number, sample in enumerate(samples, 1):
            await buffer(sample)
            if number % FLUSH_EVERY == 0:
                await recorder.flush(header.eval)
        await recorder.log_finish(
            header.eval, header.status, header.stats, header.results, header.reductions, header.error
        )


def _sample_buffer(recorder: EvalRecorder, spec: EvalSpec) -> Callable[[EvalSample], Awaitable[None]]:
    """How a sample joins the recorder's buffer. Its `log_sample` first drops any buffered sample of
    the same id and epoch (a requeued sample's earlier try), comparing with every one buffered: 1.4 s
    of a 5,000-item export, and flushing more often costs as much in reopening the zip. An export's
    samples are each written once, so they are appended as that method appends them (each with its
    summary); where a later inspect buffers otherwise, through `log_sample` (a test checks both
    write the same log)."""
    try:
        from inspect_ai.log._recorders.eval import _BufferedSample

        samples: list[Any] = recorder.data[recorder._log_file_key(spec)]._samples
    except (ImportError, AttributeError, KeyError):
        return partial(recorder.log_sample, spec)

    async def append(sample: EvalSample) -> None:
        samples.append(_BufferedSample(sample=sample, summary=sample.summary()))

    return append


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

    row: ItemRow
    """Its row (status, solved, scored, outcome)."""
    answer: Answer | None
    trace: list[CallTrace]
    error: str | None
    decision: tuple[bool, list[Verdict]] | None
    """The counted judging's on it (None unjudged)."""
    job: DrawingJob
    """Its images and concept, for a drawing worker."""
    concept: Concept | None = None
    """Its problem's concept where the dataset's kept survey had it (not read again)."""


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
    dataset = opened_dataset(dataset_settings(config))  # a dataset gone since the run: said before a file
    # is written; concepts from the survey a run kept, where it is current (each read was 1.8 s of 5,000)
    kept = kept_survey(dataset, store.path.parent / SURVEYS)
    concepts = {problem.id: problem.concept for problem in kept.problems} if kept is not None else {}
    rows = sorted(item_rows(store, [run_id]), key=lambda row: (natural_key(row.problem), row.attempt))
    drawn = images and store.sends_images(run_id)
    problems = len({row.problem for row in rows})
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
            model_usage={agent: _model_usage(totals) for agent, totals in store.call_totals(run_id).items()},
        ),
    )
    items = _logged_items(store, run_id, config, rows, concepts, drawn=images)
    return header, _samples(items, problems, drawn, processes)


def _logged_items(
    store: ResultsStore,
    run_id: str,
    config: dict[str, Any],
    rows: list[ItemRow],
    concepts: dict[str, Concept | None],
    *,
    drawn: bool,
) -> Iterator[LoggedItem]:
    """Each item of `rows` (its `item_rows` in problem number order: 1, 2, 10) with its answer
    and calls, read `READ_TOGETHER` items at a time: what the export holds never grows with the run.
    A problem's concept is read from its files only where `concepts` (by the dataset's own id) lacks it."""
    errors = store.item_errors(run_id)
    judged = bool(store.judgings(run_id))
    variant = config.get("variant", "plain")
    drawn_as: Variant = variant if variant in VARIANTS else "plain"
    settings = dataset_settings(config)
    for start in range(0, len(rows), READ_TOGETHER):
        chunk = rows[start : start + READ_TOGETHER]
        keys = [(row.problem, row.attempt) for row in chunk]
        answers = store.answers_of(run_id, keys)
        calls = store.calls_of(run_id, keys)
        decisions = store.decisions_of(run_id, keys) if judged else {}
        for row, item in zip(chunk, keys, strict=True):
            answer, trace = answers.get(item), calls.get(item, [])
            dataset_id = own_id(item[0], config["dataset"])  # the dataset's own id, as the run stored it
            sent = tuple(sorted({tuple(refs) for call in trace for refs in call.images if refs}))  # attempts
            # that show the same images in another order (test images shuffled) share a drawing
            yield LoggedItem(
                row=row,
                answer=answer,
                trace=trace,
                error=errors.get(item),
                decision=decisions.get(item) if row.scored else None,
                job=DrawingJob(
                    settings,
                    dataset_id,
                    drawn_as,
                    sent if drawn else (),
                    needs_concept(answer) and dataset_id not in concepts,
                ),
                concept=concepts.get(dataset_id),
            )


def _samples(
    items: Iterator[LoggedItem], problems: int, drawn: bool, processes: bool
) -> Iterator[EvalSample]:
    """Each item's sample, in order, its images drawn `DRAWN_AHEAD` items ahead by a drawing pool
    (`drawing_pool` of the run's `problems`). The attempts of a problem come together and send the
    same images: they share one drawing (`--attempts 3` drew each sheet three times). Only the items
    ahead are held, so what a written sample drew is let go."""
    ahead: deque[tuple[LoggedItem, Future[DrawnImages]]] = deque()
    last: tuple[DrawingJob, Future[DrawnImages]] | None = None

    def drawing(item: LoggedItem) -> Future[DrawnImages]:
        nonlocal last
        if not item.job.needed:
            return _nothing()
        if last is None or last[0] != item.job:
            last = (item.job, pool.submit(draw, item.job))
        return last[1]

    def made(item: LoggedItem, drawing: Future[DrawnImages]) -> EvalSample:
        drawn = drawing.result()
        concept = item.concept if item.concept is not None else drawn.concept
        return _sample(item.row, item.trace, item.answer, item.error, drawn, concept, item.decision)

    with drawing_pool(problems, drawn, processes) as pool:
        for coming in items:
            ahead.append((coming, drawing(coming)))
            if len(ahead) > DRAWN_AHEAD:
                yield made(*ahead.popleft())
        while ahead:
            yield made(*ahead.popleft())


def _nothing() -> Future[DrawnImages]:
    """An item with neither images nor a concept to read: nothing drawn."""
    done: Future[DrawnImages] = Future()
    done.set_result(DrawnImages())
    return done


def needs_concept(answer: Answer | None) -> bool:
    """Whether the sample's target is the problem's concept (the true sides where it has them)."""
    return not (answer is not None and answer.expected.get("sides"))


def _sample(
    row: ItemRow,
    calls: list[CallTrace],
    answer: Answer | None,
    error: str | None,
    drawn: DrawnImages,
    concept: Concept | None,
    decision: tuple[bool, list[Verdict]] | None,
) -> EvalSample:
    """One item as a sample; `row` is its `item_rows` row (status, solved, scored), `concept` its
    problem's (the target of a free-form answer), `decision` the
    counted judging's on it (None unjudged)."""
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatMessageAssistant
    from inspect_ai.scorer import Score

    problem, attempt = row.problem, row.attempt
    key = f"{sample_id(problem)}#{attempt + 1}"  # the sample's id and epoch, as inspect names it
    messages, events = _conversations(calls, drawn, key)
    expected = answer.expected if answer is not None else {}
    if expected.get("sides"):
        target = json.dumps(expected["sides"])
    else:
        target = f"Left: {concept.left} / Right: {concept.stated_right}" if concept is not None else ""
    scores = {}
    if row.scored and row.status != "failed":
        explanation = "; ".join(f"{v.judge}: {v.label}" for v in decision[1]) if decision else None
        scores["solved"] = _made(
            Score,
            value="C" if row.solved else "I",
            answer=answer.text if answer else None,
            explanation=explanation,
        )
    return _made(
        EvalSample,
        id=sample_id(problem),
        epoch=attempt + 1,
        input=calls[0].prompt if calls else problem,
        target=target,
        messages=messages,
        events=events,
        output=_output(
            calls[-1].agent if calls else "",
            _made(
                ChatMessageAssistant,
                id=f"{key}/answer",
                content=answer.text if answer else "",
                source="generate",
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
        error=_made(EvalError, message=error, traceback="", traceback_ansi="") if error else None,
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
        ChatMessageUser,
        Content,
        ContentImage,
        ContentText,
        GenerateConfig,
    )

    messages: list[ChatMessage] = []
    events: list[Event] = []
    history: dict[str, list[ChatMessage]] = defaultdict(list)
    config = GenerateConfig()
    now = datetime.now(UTC)  # when the events were written down, as inspect stamps them
    for number, call in enumerate(calls, 1):  # made without validation (`_output`)
        named = f"{key}/{number}"
        details = call.model_dump(exclude={"prompt", "reply", "parsed"})
        shown = [
            _made(ContentImage, image=url) for refs in call.images if (url := drawn.urls.get(tuple(refs)))
        ]
        content: list[Content] = [_made(ContentText, text=call.prompt), *shown]
        asked = _made(
            ChatMessageUser, id=f"{named}/prompt", content=content, source="input", metadata=details
        )
        said = _reply(call, f"{named}/reply", details)
        output = _output(call.agent, _reply(call, f"{named}/output", None), "stop")
        output.usage = _model_usage(CallTotals(call.input_tokens, call.output_tokens, call.cost_usd))
        events.append(
            _made(
                ModelEvent,
                uuid=f"{named}/event",
                timestamp=now,
                model=call.agent,
                role=call.role,
                input=[*history[call.conversation], asked],
                tools=[],
                tool_choice="none",
                config=config,
                output=output,
                cache="read" if call.cache_hit else None,
                working_time=call.latency_s,
            )
        )
        history[call.conversation] += [asked, said]
        messages += [asked, said]
    return messages, events


def _reply(call: CallTrace, named: str, details: dict[str, Any] | None) -> ChatMessageAssistant:
    """A call's reply as a message: in the conversation (with the call's `details`) or as its event's
    output (without them: the log would carry them twice more)."""
    from inspect_ai.model import ChatMessageAssistant

    return _made(
        ChatMessageAssistant,
        id=named,
        content=call.reply,
        model=call.agent,
        source="generate",
        metadata=details,
    )


def _output(model: str, said: ChatMessageAssistant, stop: StopReason) -> ModelOutput:
    """`ModelOutput.from_content` with the message given, not one made with a random id; `completion`
    is what its validator would set (`_made` runs none)."""
    from inspect_ai.model import ChatCompletionChoice, ModelOutput

    choice = _made(ChatCompletionChoice, message=said, stop_reason=stop)
    return _made(ModelOutput, model=model, choices=[choice], completion=said.text)


def _made(kind: type[Made], **fields: Any) -> Made:
    """A `kind` with these fields and the defaults of the rest, as `model_construct` makes it but
    without working out every default again: a large export makes these by the hundred thousand
    (65,000 calls: 8 messages, contents, outputs and usages each), and validating them took most of
    its time. The values are of their fields' types already; no validator's work is skipped but
    `ModelOutput`'s `completion` (`_output` sets it), and a test checks the log against validated
    objects."""
    made = kind.__new__(kind)
    object.__setattr__(made, "__dict__", _blank(kind) | fields)
    object.__setattr__(made, "__pydantic_fields_set__", set(fields))
    object.__setattr__(made, "__pydantic_extra__", None)
    object.__setattr__(made, "__pydantic_private__", None)
    return made


@cache
def _blank(kind: type[BaseModel]) -> dict[str, Any]:
    """Every field's default, in the kind's order (which its JSON keeps), required ones None."""
    required = {name: None for name, field in kind.model_fields.items() if field.is_required()}
    return dict(kind.model_construct(**required).__dict__)


def _model_roles(agents: dict[str, str], judgings: list[Judging]) -> dict[str, ModelConfig]:
    """The run's roles, and the judges of the judging that counts (`judge-1`, ...), by model."""
    from inspect_ai.model import ModelConfig

    roles = {role: ModelConfig(model=spec) for role, spec in sorted(agents.items())}
    if judgings:
        roles |= {f"judge-{n}": ModelConfig(model=spec) for n, spec in enumerate(judgings[-1].judges, 1)}
    return roles


def _usage(calls: list[CallTrace], *, by_role: bool = False) -> dict[str, ModelUsage]:
    """Tokens and cost per model (or per role)."""
    totals: dict[str, CallTotals] = {}
    for call in calls:
        key = call.role if by_role else call.agent
        before = totals.get(key, CallTotals())
        totals[key] = CallTotals(
            before.input_tokens + call.input_tokens,
            before.output_tokens + call.output_tokens,
            None if before.cost_usd is None or call.cost_usd is None else before.cost_usd + call.cost_usd,
        )
    return {key: _model_usage(total) for key, total in totals.items()}


def _model_usage(totals: CallTotals) -> ModelUsage:
    """Calls' totals in inspect's words (a cost unknown where any call had no price)."""
    from inspect_ai.model import ModelUsage

    return _made(
        ModelUsage,
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        total_tokens=totals.input_tokens + totals.output_tokens,
        total_cost=totals.cost_usd,
    )
