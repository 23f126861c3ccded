"""Each cell of an experiment as the run it stands for: its `RunConfig`, checked as `bongard run`
checks a run, every refusal one line naming the experiment file and the line of the value."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.registry import AgentSpecError
from datasets_io.errors import BongardError
from datasets_io.sampling import SampleSpec
from graphs.experiments.spec import Cell, Experiment
from graphs.registry import StrategyError, get_strategy
from graphs.runs.runner import RunConfig, Runner, parse_selection, prepare_run
from results.store import ResultsStore

IGNORED_IN_MATCH = frozenset({"concurrency", "decoding_dropped", "excluded"})
"""Settings that do not change what a run asks or answers: a stored run differing only in these is
the same cell."""


def cell_roles(cell: Cell, roles: tuple[str, ...]) -> dict[str, str]:
    """Role -> spec, as `bongard run --model` (or `--describer`/`--reasoner`/`--author`) names them."""
    named = cell.model.roles
    chosen = {
        "describer": named.get("describer") or cell.model.spec,
        "reasoner": named.get("reasoner") or cell.model.spec,
    }
    if "author" in roles:
        chosen["author"] = named.get("author") or cell.model.spec
    return {role: spec for role, spec in chosen.items() if spec}


def cell_config(experiment: Experiment, cell: Cell) -> RunConfig:
    """The run configuration of one cell, as `bongard run` would build it from the same flags."""
    try:
        info = get_strategy(cell.strategy.name)
    except (StrategyError, KeyError) as error:
        raise experiment.error(
            f"strategy {cell.strategy.name!r}: {_text(error)}", cell.strategy.name
        ) from None
    if not info.roles:
        raise experiment.error(
            f"{info.name} mixes stored runs, so it is no cell of a grid: run it with `bongard run`", info.name
        )
    roles = cell_roles(cell, info.roles)
    missing = [role for role in info.roles if role not in roles]
    if missing:
        raise experiment.error(
            f"{info.name} needs a model for {', '.join(missing)}: "
            f"give the model a spec, or {missing[0]} = SPEC",
            cell.model.shown,
        )
    dataset = cell.dataset
    try:
        problems = parse_selection(dataset.problems) if dataset.problems else None
    except BongardError as error:
        raise experiment.error(f"problems {dataset.problems!r}: {error}", dataset.problems) from None
    seed = experiment.seed if dataset.seed is None else dataset.seed
    return RunConfig(
        strategy=info.name,
        dataset=dataset.name,
        data_dir=str(Path(dataset.data_dir).expanduser()) if dataset.data_dir else None,
        dataset_options=dict(dataset.options),
        agents=roles,
        agent_params=dict(cell.params),
        problems=problems,
        sample=SampleSpec(size=dataset.sample, stratify=dataset.stratify, seed=seed)
        if dataset.sample
        else None,
        attempts=cell.attempts,
        seed=seed,
        concurrency=experiment.concurrency,
        variant=experiment.variant,
        strategy_options=dict(cell.strategy.options),
    )


def prepared_runner(
    experiment: Experiment, cell: Cell, store: ResultsStore, home: Path | None, *, ready: bool
) -> Runner:
    """The runner of the cell's run, its configuration as the run would store it (data folder,
    protocol and paper decoding filled in, a sample drawn), every name and value checked; nothing
    stored. `ready`: the agents' keys and packages checked too, as before a run."""
    config = cell_config(experiment, cell)
    try:
        return prepare_run(config, store, home, ready=ready)
    except AgentSpecError as error:
        spec = next((s for s in cell.model.specs() if s in str(error)), cell.model.shown)
        raise experiment.error(_text(error), *_keys_in(error, cell.params), spec) from None
    except StrategyError as error:
        raise experiment.error(_text(error), *cell.strategy.options, cell.strategy.name) from None
    except (BongardError, ValueError) as error:
        raise experiment.error(f"dataset {cell.dataset.name!r}: {_text(error)}", cell.dataset.name) from None


def _keys_in(error: Exception, params: Mapping[str, str]) -> list[str]:
    return [key for key in params if key in str(error)]


def _text(error: BaseException) -> str:
    return str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)


def same_run(stored: Mapping[str, Any], prepared: RunConfig) -> bool:
    """Whether a stored run's configuration is the cell's, but for settings that change nothing asked."""
    wanted = prepared.model_dump(mode="json")
    return all(stored.get(key) == value for key, value in wanted.items() if key not in IGNORED_IN_MATCH)


def stored_run_of(store: ResultsStore, prepared: RunConfig) -> str | None:
    """The newest stored run with the cell's settings, if any (a run made by hand counts too)."""
    for run_id in reversed(store.run_ids()):
        if same_run(store.run_config(run_id), prepared):
            return run_id
    return None
