"""An experiment file: a grid of strategies x models x datasets, read and checked before anything runs.

A TOML file (read with the standard library) names the strategies (with their options), the models
(one spec for every role, or one per role), the datasets (with problems, sample, stratify, seed),
and the settings every cell shares: attempts, seed, concurrency, variant, agent parameters,
judges and their policy, executor. The grid is every strategy x model x dataset; `[[remove]]`
drops the cells it matches, `[[add]]` puts in one more, `[[override]]` changes the settings of
the cells it matches. Every name and value is checked here: a bad one is one line naming the file,
the line and the value (`ExperimentError`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from datasets_io.errors import BongardError

TOP_KEYS = frozenset(
    {
        "name", "description", "strategies", "models", "datasets", "attempts", "seed", "concurrency",
        "variant", "params", "judges", "policy", "judge_style", "executor", "workers", "ray_address",
        "add", "remove", "override",
    }
)  # fmt: skip
DATASET_KEYS = frozenset({"name", "problems", "sample", "stratify", "seed", "data_dir", "options", "label"})
MODEL_ROLES = ("describer", "reasoner", "author")
MODEL_KEYS = frozenset({"spec", "params", "label", *MODEL_ROLES})
STRATEGY_KEYS = frozenset({"name", "options", "label"})
MATCH_KEYS = frozenset({"strategy", "model", "dataset"})
OVERRIDE_KEYS = frozenset({"attempts", "options", "params"})
VARIANTS = ("plain", "grey", "square", "square-grey")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class ExperimentError(BongardError, ValueError):
    """A bad experiment file: `FILE:LINE: what is wrong, and the value`."""


@dataclass(frozen=True)
class StrategyEntry:
    name: str
    options: Mapping[str, str] = field(default_factory=dict)
    label: str = ""

    @property
    def shown(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class ModelEntry:
    spec: str | None
    """The spec for every role (None: each role is named)."""
    roles: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    label: str = ""

    @property
    def shown(self) -> str:
        if self.label:
            return self.label
        return self.spec or " + ".join(f"{role}={spec}" for role, spec in self.roles.items())

    def specs(self) -> list[str]:
        return [spec for spec in (self.spec, *self.roles.values()) if spec]


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    problems: str | None = None
    sample: int | None = None
    stratify: str | None = None
    seed: int | None = None
    data_dir: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    label: str = ""

    @property
    def shown(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class Cell:
    """One run of the grid: a strategy, a model and a dataset, with the settings that apply to it."""

    strategy: StrategyEntry
    model: ModelEntry
    dataset: DatasetEntry
    attempts: int
    params: Mapping[str, str] = field(default_factory=dict)
    """Agent parameters (`-M`): the experiment's, the model's, then an override's."""

    @property
    def key(self) -> str:
        return f"{self.strategy.shown} | {self.model.shown} | {self.dataset.shown}"


@dataclass(frozen=True)
class Experiment:
    name: str
    path: Path
    source: str
    cells: tuple[Cell, ...]
    seed: int = 0
    concurrency: int = 4
    variant: str = "plain"
    judges: tuple[str, ...] = ()
    policy: str | None = None
    judge_style: str | None = None
    executor: Literal["local", "ray"] = "local"
    workers: int | None = None
    ray_address: str | None = None
    description: str = ""

    def error(self, message: str, *near: object) -> ExperimentError:
        """A one-line error about this file, at the line holding the first value of `near` found."""
        return _Reader(self.path, self.source).fail(message, *near)

    def in_batch_mode(self) -> tuple[Experiment, list[str]]:
        """The grid with each cell whose providers all have a batch API in batch mode (`-M
        batch=true`), and problems in flight raised so its batches gather them; a line for each model
        that stays direct."""
        from agents.batching import BATCH_CONCURRENCY
        from agents.registry import get_provider, split_spec

        direct: dict[str, str] = {}
        cells = []
        for cell in self.cells:
            specs = [cell.model.spec] if cell.model.spec else list(cell.model.roles.values())
            without = [s for s in specs if get_provider(split_spec(s)[0]).batches is None]
            if without:
                direct[cell.model.shown] = f"{cell.model.shown}: sent directly, {without[0]} has no batch API"
                cells.append(cell)
            else:
                cells.append(replace(cell, params={**cell.params, "batch": "true"}))
        concurrency = max(self.concurrency, BATCH_CONCURRENCY)
        return replace(self, cells=tuple(cells), concurrency=concurrency), sorted(direct.values())


class _Reader:
    """Reads one file's values, each error located at the line that holds the value."""

    def __init__(self, path: Path, source: str) -> None:
        self.path, self.lines = path, source.splitlines()

    def fail(self, message: str, *near: object) -> ExperimentError:
        return ExperimentError(f"{self.path}:{self.line_of(*near)}: {message}")

    def line_of(self, *near: object) -> int:
        """The first line holding the value as TOML writes it (a quoted string, a number), else the
        first holding its key, else 1."""
        for wanted in near:
            if wanted is None:
                continue
            forms = [f'"{wanted}"', f"'{wanted}'"] if isinstance(wanted, str) else [str(wanted)]
            if isinstance(wanted, str):
                forms += [f"{wanted} =", f"{wanted}=", f"[{wanted}]", f"[[{wanted}]]"]
            for number, line in enumerate(self.lines, 1):
                text = line.split("#", 1)[0]
                if any(form in text for form in forms):
                    return number
        return 1

    def keys(self, table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
        for key in table:
            if key not in allowed:
                raise self.fail(f"{where} has no key {key!r}; it takes: {', '.join(sorted(allowed))}", key)

    def text(self, value: Any, what: str, key: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{what} must be a non-empty string, not {value!r}", value, key)
        return value

    def count(self, value: Any, what: str, key: str, least: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise self.fail(f"{what} must be a whole number of at least {least}, not {value!r}", key)
        return value

    def strings(self, value: Any, what: str, key: str) -> dict[str, str]:
        """A table of settings, every value as the command line would give it (`-S`, `-M`, `-O`)."""
        if not isinstance(value, dict):
            raise self.fail(f"{what} must be a table of KEY = VALUE, not {value!r}", key)
        settings: dict[str, str] = {}
        for name, setting in value.items():
            if isinstance(setting, dict | list):
                raise self.fail(f"{what} {name} must be a single value, not {setting!r}", name)
            settings[name] = str(setting).lower() if isinstance(setting, bool) else str(setting)
        return settings

    def listed(self, value: Any, what: str, key: str) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise self.fail(f"{what} must be a non-empty list, not {value!r}", key)
        return value


def read_experiment(path: Path) -> Experiment:
    """The experiment a file describes, every name and value checked; `ExperimentError` otherwise."""
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ExperimentError(f"{path}: cannot read the experiment file ({error})") from None
    try:
        table = tomllib.loads(source)
    except tomllib.TOMLDecodeError as error:
        line = getattr(error, "lineno", None) or 1
        raise ExperimentError(f"{path}:{line}: not valid TOML: {str(error).split(' (at ')[0]}") from None
    return parse_experiment(table, path, source)


def parse_experiment(table: Mapping[str, Any], path: Path, source: str) -> Experiment:
    read = _Reader(path, source)
    read.keys(table, TOP_KEYS, "an experiment")
    for needed in ("name", "strategies", "models", "datasets"):
        if needed not in table:
            raise read.fail(f"the experiment needs {needed!r}")
    name = read.text(table["name"], "name", "name")
    if not NAME.match(name):
        raise read.fail(f"name {name!r} must be letters, digits, '.', '_' or '-' (at most 64)", name)
    strategies = [
        _strategy(read, entry) for entry in read.listed(table["strategies"], "strategies", "strategies")
    ]
    models = [_model(read, entry) for entry in read.listed(table["models"], "models", "models")]
    datasets = [_dataset(read, entry) for entry in read.listed(table["datasets"], "datasets", "datasets")]
    attempts = read.count(table.get("attempts", 1), "attempts", "attempts")
    shared = read.strings(table.get("params", {}), "params", "params")
    cells = [
        Cell(strategy, model, dataset, attempts, {**shared, **model.params})
        for dataset in datasets
        for strategy in strategies
        for model in models
    ]
    cells = _changed(read, cells, table, strategies, models, datasets, attempts, shared)
    _unique(read, cells)
    variant = table.get("variant", "plain")
    if variant not in VARIANTS:
        raise read.fail(f"variant {variant!r} is not one of {', '.join(VARIANTS)}", variant, "variant")
    executor = table.get("executor", "local")
    if executor not in ("local", "ray"):
        raise read.fail(f"executor {executor!r} is not local or ray", executor, "executor")
    judges = table.get("judges", [])
    if not isinstance(judges, list) or not all(isinstance(j, str) and j for j in judges):
        raise read.fail(f"judges must be a list of judge specs, not {judges!r}", "judges")
    return Experiment(
        name=name,
        path=path,
        source=source,
        cells=tuple(cells),
        seed=read.count(table.get("seed", 0), "seed", "seed", least=0),
        concurrency=read.count(table.get("concurrency", 4), "concurrency", "concurrency"),
        variant=variant,
        judges=tuple(judges),
        policy=_optional_text(read, table, "policy"),
        judge_style=_optional_text(read, table, "judge_style"),
        executor=executor,
        workers=read.count(table["workers"], "workers", "workers") if "workers" in table else None,
        ray_address=_optional_text(read, table, "ray_address"),
        description=_optional_text(read, table, "description") or "",
    )


def _optional_text(read: _Reader, table: Mapping[str, Any], key: str) -> str | None:
    return read.text(table[key], key, key) if key in table else None


def _strategy(read: _Reader, entry: Any) -> StrategyEntry:
    if isinstance(entry, str):
        return StrategyEntry(read.text(entry, "a strategy", "strategies"))
    if not isinstance(entry, dict):
        raise read.fail(f"a strategy is a name or a table with name and options, not {entry!r}", "strategies")
    read.keys(entry, STRATEGY_KEYS, "a strategy")
    return StrategyEntry(
        read.text(entry.get("name"), "a strategy's name", "strategies"),
        read.strings(entry.get("options", {}), "a strategy's options", "options"),
        entry.get("label", ""),
    )


def _model(read: _Reader, entry: Any) -> ModelEntry:
    if isinstance(entry, str):
        return ModelEntry(read.text(entry, "a model", "models"))
    if not isinstance(entry, dict):
        raise read.fail(
            f"a model is a spec or a table with spec (or roles) and params, not {entry!r}", "models"
        )
    read.keys(entry, MODEL_KEYS, "a model")
    roles = {role: read.text(entry[role], f"the {role}", role) for role in MODEL_ROLES if role in entry}
    spec = read.text(entry["spec"], "a model's spec", "spec") if "spec" in entry else None
    if spec is None and not roles:
        raise read.fail("a model table needs spec, or describer and reasoner", "models")
    params = read.strings(entry.get("params", {}), "a model's params", "params")
    return ModelEntry(spec, roles, params, entry.get("label", ""))


def _dataset(read: _Reader, entry: Any) -> DatasetEntry:
    if not isinstance(entry, dict):
        raise read.fail(f"each [[datasets]] is a table with at least a name, not {entry!r}", "datasets")
    read.keys(entry, DATASET_KEYS, "a dataset")
    problems = entry.get("problems")
    if problems is not None and not isinstance(problems, str):
        problems = ",".join(map(str, problems)) if isinstance(problems, list) else str(problems)
    sample = read.count(entry["sample"], "sample", "sample") if "sample" in entry else None
    stratify = entry.get("stratify")
    if stratify is not None and sample is None:
        raise read.fail("stratify needs sample", "stratify")
    if sample is not None and problems is not None:
        raise read.fail("a dataset takes problems or sample, not both", "sample")
    return DatasetEntry(
        name=read.text(entry.get("name"), "a dataset's name", "datasets"),
        problems=problems,
        sample=sample,
        stratify=stratify,
        seed=read.count(entry["seed"], "seed", "seed", least=0) if "seed" in entry else None,
        data_dir=entry.get("data_dir"),
        options=read.strings(entry.get("options", {}), "a dataset's options", "options"),
        label=entry.get("label", ""),
    )


def _matches(read: _Reader, cell: Cell, match: Mapping[str, Any]) -> bool:
    wanted = {key: match[key] for key in MATCH_KEYS if key in match}
    if not wanted:
        raise read.fail(
            "a [[remove]] or [[override]] names a strategy, a model or a dataset", "remove", "override"
        )
    names = {
        "strategy": {cell.strategy.name, cell.strategy.shown},
        "model": {cell.model.shown, *cell.model.specs()},
        "dataset": {cell.dataset.name, cell.dataset.shown},
    }
    return all(value in names[key] for key, value in wanted.items())


def _changed(
    read: _Reader,
    cells: list[Cell],
    table: Mapping[str, Any],
    strategies: Sequence[StrategyEntry],
    models: Sequence[ModelEntry],
    datasets: Sequence[DatasetEntry],
    attempts: int,
    shared: Mapping[str, str],
) -> list[Cell]:
    """The grid after `[[remove]]`, `[[add]]` and `[[override]]`, in that order."""
    for removal in table.get("remove", []):
        read.keys(removal, MATCH_KEYS, "a [[remove]]")
        kept = [cell for cell in cells if not _matches(read, cell, removal)]
        if len(kept) == len(cells):
            raise read.fail(f"[[remove]] {dict(removal)} matches no cell of the grid", *removal.values())
        cells = kept
    for addition in table.get("add", []):
        read.keys(addition, MATCH_KEYS | OVERRIDE_KEYS, "an [[add]]")
        strategy = _strategy(read, addition.get("strategy", ""))
        model = _model(read, addition.get("model", ""))
        dataset = next((d for d in datasets if addition.get("dataset") in (d.name, d.shown)), None)
        if dataset is None:
            raise read.fail(
                f"[[add]] names dataset {addition.get('dataset')!r}; the experiment's datasets: "
                + ", ".join(d.shown for d in datasets),
                addition.get("dataset"),
                "add",
            )
        strategy = next((s for s in strategies if strategy.name in (s.name, s.shown)), strategy)
        model = next((m for m in models if addition.get("model") in (m.shown, m.spec)), model)
        cell = Cell(strategy, model, dataset, attempts, {**shared, **model.params})
        if any(existing.key == cell.key for existing in cells):
            raise read.fail(f"[[add]] {cell.key!r} is a cell of the grid already: give it a label", "add")
        cells.append(_overridden(read, cell, addition))
    for override in table.get("override", []):
        read.keys(override, MATCH_KEYS | OVERRIDE_KEYS, "an [[override]]")
        chosen = [_matches(read, cell, override) for cell in cells]
        if not any(chosen):
            raise read.fail(f"[[override]] {_named(override)} matches no cell of the grid", "override")
        cells = [
            _overridden(read, cell, override) if hit else cell
            for cell, hit in zip(cells, chosen, strict=True)
        ]
    return cells


def _named(match: Mapping[str, Any]) -> dict[str, Any]:
    return {key: match[key] for key in MATCH_KEYS if key in match}


def _overridden(read: _Reader, cell: Cell, change: Mapping[str, Any]) -> Cell:
    options = read.strings(change.get("options", {}), "options", "options")
    params = read.strings(change.get("params", {}), "params", "params")
    attempts = (
        read.count(change["attempts"], "attempts", "attempts") if "attempts" in change else cell.attempts
    )
    strategy = replace(cell.strategy, options={**cell.strategy.options, **options})
    return replace(cell, strategy=strategy, attempts=attempts, params={**cell.params, **params})


def _unique(read: _Reader, cells: Sequence[Cell]) -> None:
    seen: set[str] = set()
    for cell in cells:
        if cell.key in seen:
            raise read.fail(f"two cells are both {cell.key!r}: give one a label", cell.strategy.name)
        seen.add(cell.key)
    if not cells:
        raise read.fail("the grid has no cells left")
