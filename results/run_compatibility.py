"""Which runs a comparison may count, and which may share one of its rows.

A row of the comparison is strategy x model x dataset. Two runs land in one row
only when they followed the same protocol (dataset options such as held-out
test panels, image variant, strategy options, attempts, agent parameters) and
solved different problems, so a row's figure is one experiment's, split over
runs. A run that is not complete (running, interrupted, or with failed items)
is left out unless asked for, and the reader is told how to finish it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from datasets_io.errors import BongardError
from datasets_io.workspace import store_home_flag
from results.store import RESUME_HINT, RUN_ID, ResultsStore

PROTOCOL_SETTINGS = (
    "dataset_options",
    "variant",
    "strategy_options",
    "attempts",
    "agent_params",
    "agent_config",
)
"""RunConfig fields that change what a run measures; runs in one row must agree on each."""
TRANSPORT_PARAMS = frozenset({"batch", "batch_requests", "batch_wait_s", "batch_poll_s", "prompt_cache"})
"""Agent parameters that change how calls travel and are billed, not what they ask: runs that
differ only in them (a batch run beside a direct one) may share a row."""


def _measured(config: Mapping[str, Any], name: str) -> Any:
    """A protocol setting as it bears on what a run measures: its transport parameters aside."""
    value = config.get(name)
    if name == "agent_params" and isinstance(value, Mapping):
        return {key: v for key, v in value.items() if key not in TRANSPORT_PARAMS}
    return value


class IncompatibleRuns(BongardError, ValueError):
    """Runs that would share a row of the comparison but did not measure the same thing."""


@dataclass(frozen=True)
class Selection:
    """The runs to count, a line per run left out saying why, and one per incomplete run counted
    anyway (with `include_incomplete`), so no partial figure passes for a whole one."""

    run_ids: list[str]
    left_out: list[str]
    incomplete: list[str]


def select_runs(
    store: ResultsStore, run_ids: list[str], *, include_incomplete: bool = False, mixed_rows: bool = False
) -> Selection:
    """Leave out incomplete runs (unless `include_incomplete`), then refuse rows that would mix
    protocols (unless `mixed_rows`) or count one problem twice (always)."""
    kept: list[str] = []
    left_out: list[str] = []
    incomplete: list[str] = []
    for run_id in run_ids:
        summary = store.summary(run_id)
        if summary.status == "complete":
            kept.append(run_id)
            continue
        done = f"{summary.done}/{summary.planned if summary.planned is not None else '?'} items done"
        retry = " --retry-errors" if summary.status in ("partial", "failed") else ""
        resume = f"`{RESUME_HINT.format(run_id=run_id)}{store_home_flag(store.path.parent)}{retry}`"
        hint = "" if summary.status == "running" else f"; finish it with {resume}"
        if summary.status in ("partial", "failed") and not summary.retryable:
            hint = "; its failures would repeat on a retry (the strategy refused them)"
        (incomplete if include_incomplete else left_out).append(f"{run_id} ({summary.status}, {done}{hint})")
        if include_incomplete:
            kept.append(run_id)
    if not kept:
        raise IncompatibleRuns(
            "no complete run to compare; left out: " + "; ".join(left_out) + " (or give --include-incomplete)"
        )
    for row, members in _rows(store, kept).items():
        if len(members) > 1:
            _check_row(store, row, members, mixed_rows)
    return Selection(kept, left_out, incomplete)


SHORT_SPEC_CHARS = 30
"""Widest a model spec is shown where a table cell is narrow (the runs page); the whole on hover."""


def short_spec(spec: str, limit: int = SHORT_SPEC_CHARS) -> str:
    """A model spec for a narrow cell: a server's URL cut to its host and port, as
    `judgeA@127.0.0.1:8001` for `openai-compatible:judgeA@http://127.0.0.1:8001/v1`; whatever is
    still longer than `limit` cut with an ellipsis."""
    _, _, rest = spec.partition(":")
    name, at, url = rest.rpartition("@")
    shown = f"{name}@{urlsplit(url).netloc}" if at and "://" in url else spec
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def model_label(config: Mapping[str, Any]) -> str:
    """The model column of a run: its one agent spec, or `role=spec` per role when they differ. A run
    that calls none (a mixture of stored runs) is "no model", with the strategy options it was given
    other than those naming stored runs, so mixtures of the same runs by other rules are rows apart."""
    agents: dict[str, str] = config["agents"]
    if not agents:
        options = config.get("strategy_options") or {}
        given = [f"{key}={value}" for key, value in sorted(options.items()) if not RUN_ID.search(str(value))]
        return "no model" + (f" ({', '.join(given)})" if given else "")
    if len(set(agents.values())) == 1:
        return next(iter(agents.values()))
    return " + ".join(f"{role}={spec}" for role, spec in sorted(agents.items()))


def _rows(store: ResultsStore, run_ids: list[str]) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for run_id in run_ids:
        config = store.run_config(run_id)
        key = f"{config['strategy']} x {model_label(config)} x {config['dataset']}"
        rows.setdefault(key, []).append(run_id)
    return rows


def _check_row(store: ResultsStore, row: str, run_ids: list[str], mixed_rows: bool) -> None:
    configs = {run_id: store.run_config(run_id) for run_id in run_ids}
    first, *others = run_ids
    if not mixed_rows:
        for other in others:
            differing = [
                f"{name} {_measured(configs[first], name)!r} vs {_measured(configs[other], name)!r}"
                for name in PROTOCOL_SETTINGS
                if _measured(configs[first], name) != _measured(configs[other], name)
            ]
            if differing:
                raise IncompatibleRuns(
                    f"runs {first} and {other} would share the row {row} but differ in "
                    f"{'; '.join(differing)}: compare them apart (name the runs), or give --mixed-rows "
                    "to count them as one"
                )
    seen: dict[str, str] = {}
    for run_id in run_ids:
        problems = {problem for problem, _ in store.finished_items(run_id) | store.failed_items(run_id)}
        for problem in sorted(problems):
            if problem in seen:
                raise IncompatibleRuns(
                    f"runs {seen[problem]} and {run_id} both attempted {problem} in the row {row}: a problem "
                    "would count twice; name only one of them"
                )
            seen[problem] = run_id
