"""What an experiment will cost before it is paid for: calls, tokens and dollars per cell.

Calls are exact for a first run: the strategy's own count for each problem's shape (`calls_for`)
x the problems and attempts left to run, and one call per judge per answer of a judged strategy.
Tokens come from the cell's rendered requests (`graphs.experiments.rehearsal`): each text counted
with the model's published tokenizer (`agents.text_tokens`), each image by its provider's rule
(`agents.image_tokens`), each earlier reply a request carries at the expected reply length. The
expected reply is the median of this strategy's stored replies to the same task (this model's
first, any model's next), else `DEFAULT_REPLY_TOKENS`; the range runs from half of it to the reply
limit (`max_tokens`, or `UNLIMITED_REPLY_TOKENS` where none is set). Dollars come from the price
the run would use (genai-prices, `$BONGARD_PRICES`, `-M price_input/price_output`); None where a
model has no known price. A cell already stored with the same settings costs what is left of it:
0 when it is complete.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agents.call import Usage
from agents.image_tokens import ImageRule, image_rule
from agents.images import ImagePolicy
from agents.pricing import Pricing
from agents.registry import agent_price, billed_price, check_agent_params, split_spec
from agents.text_tokens import TextCounter, text_counter
from graphs.experiments.cells import prepared_runner, stored_run_of
from graphs.experiments.rehearsal import DEFAULT_REHEARSED, Rehearsal, RenderedCall, rehearse
from graphs.experiments.spec import Cell, Experiment
from graphs.runs.runner import RunConfig, Runner
from judges.specs import JUDGE_KINDS
from results.experiments import ExperimentRecords
from results.store import ResultsStore

DEFAULT_REPLY_TOKENS = 300
"""Expected reply length where the store holds no reply of the strategy's task to learn it from."""
MODEL_SETTINGS = {
    "agents",
    "agent_params",
    "agent_config",
    "paper_decoding",
    "decoding_dropped",
    "concurrency",
}
"""What a cell's model changes in its configuration, none of which changes the requests' content."""
UNLIMITED_REPLY_TOKENS = 4096
"""The high end of a reply where no `max_tokens` limits it."""


@dataclass(frozen=True)
class Priced:
    """One model's way of counting and pricing a request."""

    spec: str
    counter: TextCounter
    images: ImageRule
    policy: ImagePolicy
    price: Pricing | None
    """The price the run pays: the batch price in batch mode."""
    reply_limit: int | None
    direct_price: Pricing | None
    """The same calls' price sent directly (the price, outside batch mode)."""


def _plus(total: float | None, price: Pricing | None, usage: Usage) -> float | None:
    cost = None if price is None else price.cost(usage)
    return None if total is None or cost is None else total + cost


@dataclass
class Estimate:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    direct_cost_usd: float | None = 0.0

    def add(self, tokens_in: int, tokens_out: int, model: Priced) -> None:
        self.input_tokens += tokens_in
        self.output_tokens += tokens_out
        usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out)
        self.cost_usd = _plus(self.cost_usd, model.price, usage)
        self.direct_cost_usd = _plus(self.direct_cost_usd, model.direct_price, usage)

    def scaled(self, factor: float) -> Estimate:
        return Estimate(
            round(self.input_tokens * factor),
            round(self.output_tokens * factor),
            None if self.cost_usd is None else self.cost_usd * factor,
            None if self.direct_cost_usd is None else self.direct_cost_usd * factor,
        )


@dataclass
class CellPlan:
    key: str
    strategy: str
    model: str
    dataset: str
    problems: int
    attempts: int
    calls: int | None
    """Calls left to make (the strategy's count, judges included); None where it states none."""
    judge_calls: int
    cell_calls: int | None
    """Calls of the whole cell, as a first run makes them."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cost_low_usd: float | None = None
    cost_high_usd: float | None = None
    stored_run: str | None = None
    note: str = ""
    counted_by: list[str] = field(default_factory=list)
    cost_per_call_usd: float | None = None
    """The estimate of one call: a budget lets a call start only while what is spent and this
    together stay within it."""
    direct_cost_usd: float | None = None
    """What `cost_usd` would be with every call sent directly: above it where the cell runs in batch
    mode, at the batch price."""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    name: str
    cells: list[CellPlan]

    @property
    def calls(self) -> int | None:
        counts = [cell.calls for cell in self.cells]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    def total(self, key: str) -> float | None:
        values = [getattr(cell, key) for cell in self.cells]
        return None if any(v is None for v in values) else float(sum(values))

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "calls": self.calls,
            "cost": self.total("cost_usd"),
            "cost_low": self.total("cost_low_usd"),
            "cost_high": self.total("cost_high_usd"),
            "direct_cost": self.total("direct_cost_usd"),
            "cells": [cell.as_json() for cell in self.cells],
        }


def priced(spec: str, config: RunConfig) -> Priced:
    chosen, paper = config.agent_shares()[spec]
    params = check_agent_params(spec, chosen, config=config.agent_config or None, defaults=paper)
    provider, model = split_spec(spec)
    model = model.split("@", 1)[0]
    return Priced(
        spec=spec,
        counter=text_counter(provider, model),
        images=image_rule(provider, model),
        policy=ImagePolicy(max_side=params.image_max_side or None),
        price=billed_price(spec, params),
        reply_limit=params.max_tokens,
        direct_price=agent_price(spec, params),
    )


def expected_reply(store: ResultsStore, strategy: str, task: str, spec: str) -> int | None:
    """The median output tokens of stored replies to this strategy's task: this model's, else any."""
    with store.reading() as db:
        rows = db.execute(
            "SELECT c.agent, c.output_tokens FROM calls c JOIN runs r ON r.id = c.run_id "
            "WHERE json_extract(r.config, '$.strategy') = ? AND c.task = ? AND c.output_tokens > 0 "
            "AND c.cache_hit = 0",
            (strategy, task),
        ).fetchall()
    own = [int(tokens) for agent, tokens in rows if agent == spec]
    chosen = own or [int(tokens) for _, tokens in rows]
    return round(statistics.median(chosen)) if chosen else None


def _input_tokens(call: RenderedCall, model: Priced, reply_tokens: int) -> int:
    counter = model.counter
    text = sum(counter.count(t) for t in call.texts) + counter.message_overhead * (
        len(call.texts) + call.replies
    )
    images = sum(model.images.tokens(width, height) for width, height in call.images)
    return text + counter.reply_priming + images + call.replies * reply_tokens


def _estimates(
    calls: Sequence[RenderedCall],
    models: Mapping[str, Priced],
    replies: Mapping[tuple[str, str], int],
    level: str,
) -> Estimate:
    """The rendered calls priced, with replies at their expected length (`level` mid), half of it
    (low) or the limit (high)."""
    estimate = Estimate()
    for call in calls:
        model = models[call.role]
        expected = replies[(call.role, call.task)]
        limit = model.reply_limit or max(UNLIMITED_REPLY_TOKENS, expected)
        reply = {"low": expected // 2, "mid": expected, "high": limit}[level]
        estimate.add(_input_tokens(call, model, reply), reply, model)
    return estimate


def plan_cell(
    experiment: Experiment,
    cell: Cell,
    store: ResultsStore,
    home: Path | None,
    rehearsed: int = DEFAULT_REHEARSED,
    ready: bool = False,
    rehearsals: Rehearsals | None = None,
) -> tuple[CellPlan, Runner]:
    runner = prepared_runner(experiment, cell, store, home, ready=ready)
    config = runner.config
    info = runner.info
    recorded = ExperimentRecords(store).cell_run(experiment.name, cell.key)
    stored = recorded or stored_run_of(store, config)
    done = store.finished_items(stored) if stored else set()
    pending = [(p, a) for p in runner.problems for a in range(config.attempts) if (p.key, a) not in done]
    options = runner.config.strategy_options
    per_problem = {p.key: info.calls_for(runner.dataset.load(p.id), options) for p in runner.problems}
    counts = [per_problem[p.key] for p, _ in pending]
    judged = len(experiment.judges) * len(pending) if info.judged else 0
    unknown = any(c is None for c in per_problem.values())
    calls_left = None if unknown else sum(c or 0 for c in counts) + judged
    cell_calls = None if unknown else sum(c or 0 for c in per_problem.values()) * config.attempts
    plan = CellPlan(
        key=cell.key,
        strategy=cell.strategy.shown,
        model=cell.model.shown,
        dataset=cell.dataset.shown,
        problems=len(runner.problems),
        attempts=config.attempts,
        calls=calls_left,
        judge_calls=judged,
        cell_calls=cell_calls,
        stored_run=stored,
    )
    if stored and not pending:
        plan.note = f"stored as {stored}, complete: costs 0"
        plan.input_tokens = plan.output_tokens = 0
        plan.cost_usd = plan.cost_low_usd = plan.cost_high_usd = plan.direct_cost_usd = 0.0
        return plan, runner
    if stored:
        plan.note = (
            f"stored as {stored}: {len(pending)} of {len(runner.problems) * config.attempts} items left"
        )
    _price_cell(
        plan, runner, store, [p.id for p, _ in pending], counts, rehearsed, rehearsals or Rehearsals()
    )
    if judged and [spec for spec in experiment.judges if spec.partition(":")[0] not in JUDGE_KINDS]:
        # a judge's prompt holds the answer
        plan.cost_usd = plan.cost_low_usd = plan.cost_high_usd = plan.direct_cost_usd = None
        plan.note = (plan.note + "; " if plan.note else "") + f"{judged} calls of model judges not priced"
    return plan, runner


class Rehearsals:
    """Rehearsals by what they render: the cells of one strategy, dataset and problems send the same
    requests whatever the model (but for its image size), so one rehearsal serves them all."""

    def __init__(self) -> None:
        self.done: dict[str, Rehearsal] = {}

    def get(self, config: RunConfig, sample: list[str], policies: dict[str, ImagePolicy]) -> Rehearsal:
        asked = config.model_dump(mode="json", exclude=MODEL_SETTINGS)
        key = json.dumps([asked, sample, sorted((r, p.max_side or 0) for r, p in policies.items())])
        if key not in self.done:
            self.done[key] = rehearse(config, sample, policies)
        return self.done[key]


def _price_cell(
    plan: CellPlan,
    runner: Runner,
    store: ResultsStore,
    pending: list[str],
    counts: list[int | None],
    rehearsed: int,
    rehearsals: Rehearsals,
) -> None:
    config = runner.config
    models = {role: priced(spec, config) for role, spec in config.agents.items()}
    plan.counted_by = sorted(
        {f"{m.spec}: text by {m.counter.name}; images by {m.images.name}" for m in models.values()}
    )
    sample = list(dict.fromkeys(pending))[:rehearsed]
    rehearsal = rehearsals.get(config, sample, {role: model.policy for role, model in models.items()})
    if not rehearsal.complete or not rehearsal.calls:
        why = next(iter(rehearsal.failures.values()), "no call was made")
        plan.note = (
            plan.note + "; " if plan.note else ""
        ) + f"tokens not estimated: the rehearsal failed ({why})"
        return
    replies = {}
    for call in rehearsal.calls:
        key = (call.role, call.task)
        if key not in replies:
            learned = expected_reply(store, config.strategy, call.task, models[call.role].spec)
            limit = models[call.role].reply_limit
            replies[key] = min(learned or DEFAULT_REPLY_TOKENS, limit or UNLIMITED_REPLY_TOKENS)
    rehearsed_calls = len(rehearsal.calls)
    factor = sum(c or 0 for c in counts) / rehearsed_calls
    mid, low, high = (
        _estimates(rehearsal.calls, models, replies, level).scaled(factor) for level in ("mid", "low", "high")
    )
    plan.input_tokens, plan.output_tokens = mid.input_tokens, mid.output_tokens
    plan.cost_usd, plan.cost_low_usd, plan.cost_high_usd = mid.cost_usd, low.cost_usd, high.cost_usd
    plan.direct_cost_usd = mid.direct_cost_usd
    if mid.cost_usd is not None:
        plan.cost_per_call_usd = mid.cost_usd / max(1, sum(c or 0 for c in counts))


def planned(
    experiment: Experiment,
    store: ResultsStore,
    home: Path | None,
    *,
    ready: bool = False,
    rehearsed: int = DEFAULT_REHEARSED,
) -> list[tuple[CellPlan, Runner]]:
    """Every cell's plan and its prepared runner; `ready`: keys and packages checked, as before a run."""
    rehearsals = Rehearsals()
    return [
        plan_cell(experiment, cell, store, home, rehearsed, ready=ready, rehearsals=rehearsals)
        for cell in experiment.cells
    ]


def plan_experiment(
    experiment: Experiment, store: ResultsStore, home: Path | None, rehearsed: int = DEFAULT_REHEARSED
) -> Plan:
    return Plan(experiment.name, [cell for cell, _ in planned(experiment, store, home, rehearsed=rehearsed)])
