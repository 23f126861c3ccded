"""A stored run as an inspect_ai eval log, so `inspect view` (and any tool that reads its logs)
opens our runs beside a team's other evaluations.

The mapping: a run is an eval (its strategy the task, its reasoner the model, attempts the epochs,
its status the log's); an item (problem, attempt) is a sample whose messages are every call's
prompt and reply in order, whose output is the final answer, whose target is the true concept (or
the true sides of the test images) and whose score `solved` is C or I as `compare` counts it. An
unjudged free-form answer has no score, a failed item carries its error; each sample's metadata
says its outcome (a refusal, a block or a cut-off counted apart, as in `compare`) and its output's
stop reason says it in inspect's words. Each call's role, agent, conversation, images, tokens,
cost (unknown: none), stop, latency and cache hit stay in the message's metadata. The inspect_ai
package is needed only here (extra `inspect`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from datasets_io.counting import DEFAULT_COUNTING
from datasets_io.errors import BongardError
from datasets_io.report import UNSOLVED_COLUMNS, comparison_table, items_frame, problems_frame
from datasets_io.run_compatibility import model_label
from datasets_io.store import ResultsStore

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ChatMessage, ModelUsage

    from datasets_io.problem import Concept
    from datasets_io.records import Answer, CallTrace

INSPECT_STOP_REASONS: dict[str, Literal["max_tokens", "content_filter"]] = {
    "cut off": "max_tokens", "blocked": "content_filter", "refused": "content_filter",
}  # fmt: skip
"""An item's stopped outcome as inspect's stop reason (it names a refusal a content filter, as its
own Anthropic provider does)."""
STATUS = {"complete": "success", "failed": "error", "interrupted": "cancelled", "running": "started"}
"""Our run status -> inspect's eval status."""


class MissingInspect(BongardError, ImportError):
    """inspect_ai is not installed."""


def _iso(timestamp: float | None) -> str:
    return datetime.fromtimestamp(timestamp or 0, UTC).isoformat()


def export_run(store: ResultsStore, run_id: str, out: Path) -> Path:
    """Write `out/<run>.eval` and return its path."""
    try:
        from inspect_ai.log import write_eval_log
    except ImportError:
        raise MissingInspect("exporting to inspect needs inspect_ai: pip install -e '.[inspect]'") from None
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{run_id}.eval"
    write_eval_log(eval_log(store, run_id), path)
    return path


def eval_log(store: ResultsStore, run_id: str) -> EvalLog:
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

    from graphs.reports.analyses import run_dataset

    summary = store.summary(run_id)
    config = summary.config
    dataset = run_dataset(store, run_id)
    answers = {(p, a): answer for p, a, answer in store.answer_records(run_id)}
    errors = store.item_errors(run_id)
    samples, calls = [], []
    for row in items_frame(store, [run_id]).itertuples(index=False):
        item = (str(row.problem), int(row.attempt))
        trace = store.item_calls(run_id, *item)
        calls += trace
        concept = dataset.problem(item[0].split("/", 1)[1]).concept
        samples.append(_sample(store, run_id, row, trace, answers.get(item), errors.get(item), concept))
    rows = comparison_table(problems_frame(store, [run_id], DEFAULT_COUNTING)).to_dict("records")
    row = rows[0] if rows else {"n": 0, "problems": 0} | dict.fromkeys(UNSOLVED_COLUMNS.values(), 0)
    metrics = {"solved": EvalMetric(name="solved", value=row["solved"] if row["n"] else float("nan"))}
    metrics["accuracy"] = EvalMetric(name="accuracy", value=row["accuracy"] if row["n"] else float("nan"))
    metrics |= {
        column: EvalMetric(name=column, value=int(row[column])) for column in UNSOLVED_COLUMNS.values()
    }
    sessions = store.provenance(run_id)
    return EvalLog(
        status=STATUS[summary.status],
        eval=EvalSpec(
            eval_id=run_id,
            run_id=run_id,
            created=_iso(summary.created_at),
            task=f"bongard/{config['strategy']}",
            task_args=config.get("strategy_options", {}),
            dataset=EvalDataset(name=config["dataset"], samples=row["problems"]),
            model=model_label(config["agents"]),
            model_roles=None,
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
            model_usage=_usage(calls),
        ),
        samples=samples,
    )


def _sample(
    store: ResultsStore,
    run_id: str,
    row: Any,
    calls: list[CallTrace],
    answer: Answer | None,
    error: str | None,
    concept: Concept | None,
) -> EvalSample:
    """One item as a sample; `row` is its `items_frame` row (status, solved, scored)."""
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    problem, attempt = str(row.problem), int(row.attempt)
    expected = answer.expected if answer is not None else {}
    target = f"Left: {concept.left} / Right: {concept.stated_right}" if concept is not None else ""
    if expected.get("sides"):
        target = json.dumps(expected["sides"])
    scores = {}
    if row.scored and row.status != "failed":
        decision = store.item_decision(run_id, problem, attempt)
        explanation = "; ".join(f"{v.judge}: {v.label}" for v in decision[1]) if decision else None
        scores["solved"] = Score(value="C" if row.solved else "I", answer=answer.text if answer else None,
                                 explanation=explanation)  # fmt: skip
    return EvalSample(
        id=problem,
        epoch=attempt + 1,
        input=calls[0].prompt if calls else problem,
        target=target,
        messages=[message for call in calls for message in _messages(call)],
        output=ModelOutput.from_content(
            model=calls[-1].agent if calls else "",
            content=answer.text if answer else "",
            stop_reason=INSPECT_STOP_REASONS.get(str(row.outcome), "stop"),
        ),
        scores=scores,
        model_usage=_usage(calls),
        metadata={
            "problem": problem,
            "attempt": attempt,
            "parse_status": answer.parse_status if answer else None,
            "outcome": str(row.outcome),
        },
        error=EvalError(message=error, traceback="", traceback_ansi="") if error else None,
    )


def _messages(call: CallTrace) -> list[ChatMessage]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

    details = call.model_dump(exclude={"prompt", "reply", "parsed"})
    return [
        ChatMessageUser(content=call.prompt, source="input", metadata=details),
        ChatMessageAssistant(content=call.reply, model=call.agent, source="generate", metadata=details),
    ]


def _usage(calls: list[CallTrace]) -> dict[str, ModelUsage]:
    from inspect_ai.model import ModelUsage

    tokens: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    costs: dict[str, list[float | None]] = defaultdict(list)
    for call in calls:
        tokens[call.agent][0] += call.input_tokens
        tokens[call.agent][1] += call.output_tokens
        costs[call.agent].append(call.cost_usd)
    return {  # a cost some call has no price for is unknown (None), never a sum that reads as known
        agent: ModelUsage(
            input_tokens=i, output_tokens=o, total_tokens=i + o,
            total_cost=None if None in costs[agent] else sum(c for c in costs[agent] if c is not None),
        )
        for agent, (i, o) in tokens.items()
    }  # fmt: skip
