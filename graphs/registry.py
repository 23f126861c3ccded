"""Strategies registered by name; other packages add theirs through entry points.

A strategy is a function returning a compiled LangGraph `StateGraph`,
registered with `@strategy(...)`. A package registers a `StrategyInfo` under
the entry-point group `bongard_agents.strategies`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from datasets_io.plugins import PluginGroup
from datasets_io.problem import BongardProblem, Concept

ENTRY_POINT_GROUP = "bongard_agents.strategies"


@dataclass(frozen=True)
class DatasetContext:
    """What a strategy may know of the rest of the dataset: every concept, in dataset order."""

    concepts: Sequence[tuple[str, Concept]] = ()

    @classmethod
    def of(cls, problems: Sequence[BongardProblem]) -> DatasetContext:
        return cls(tuple((p.id, p.concept) for p in problems if p.concept is not None))

    def other_concepts(self, own: Concept) -> list[Concept]:
        """Every distinct concept of the dataset other than `own`, in dataset order: distractors."""
        seen = {(own.left, own.right)}
        others = []
        for _, concept in self.concepts:
            if (concept.left, concept.right) not in seen:
                seen.add((concept.left, concept.right))
                others.append(concept)
        return others


def flag_option(options: dict[str, Any], name: str, default: bool) -> bool:
    """A yes/no strategy option as given on the command line (`-S cot=false`)."""
    value = str(options.get(name, default)).strip().lower()
    if value not in {"true", "false", "yes", "no", "1", "0"}:
        raise StrategyError(f"option {name} takes true or false, not {options[name]!r}")
    return value in {"true", "yes", "1"}


def seeded_random(seed: int, problem: BongardProblem, purpose: str) -> random.Random:
    """A generator that depends only on the seed, the problem and what it is for."""
    return random.Random(f"{seed}:{problem.key}:{purpose}")


@dataclass(frozen=True)
class Reused:
    """A result taken from an earlier run for this problem: what, from which run and agent."""

    value: Any
    run: str
    agent: str


Preparer = Callable[[BongardProblem, DatasetContext, int, dict[str, Any]], dict[str, Any]]
"""(problem, dataset context, seed, options) -> the strategy's inputs, plain JSON."""


@dataclass(frozen=True)
class StrategyInfo:
    name: str
    family: str
    paper: str
    section: str
    roles: tuple[str, ...]
    calls: str
    """Calls per problem, as the paper's protocol prescribes."""
    build: Callable[[], CompiledStateGraph[Any, Any, Any, Any]]
    prepare: Preparer | None = None
    needs_test_panels: bool = False
    recursion_limit: int = 25
    options: dict[str, str] = field(default_factory=dict)
    """Option name -> what it does, for `bongard strategies`."""
    reuses: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Option naming an earlier run -> (the `Answer.details` key taken from that run's answer for
    the same problem, the role that wrote it), e.g. `rules_from` -> (`rule_summary`, `reasoner`);
    the runner looks it up and hands `prepare` a `Reused` value under the option's name."""


_STRATEGIES: dict[str, StrategyInfo] = {}
_plugins = PluginGroup(ENTRY_POINT_GROUP)


class StrategyError(ValueError):
    """An unknown strategy or a problem a strategy cannot take; the message says which and why."""


def strategy(
    name: str, **info: Any
) -> Callable[
    [Callable[[], CompiledStateGraph[Any, Any, Any, Any]]],
    Callable[[], CompiledStateGraph[Any, Any, Any, Any]],
]:
    """Decorator: register the graph builder it wraps as strategy `name`."""

    def register(
        build: Callable[[], CompiledStateGraph[Any, Any, Any, Any]],
    ) -> Callable[[], CompiledStateGraph[Any, Any, Any, Any]]:
        _STRATEGIES[name] = StrategyInfo(name=name, build=build, **info)
        return build

    return register


def _register_plugin(name: str, info: Any) -> None:
    if isinstance(info, StrategyInfo):
        _STRATEGIES.setdefault(info.name, info)


def _load() -> None:
    import graphs.case_study
    import graphs.case_study_binary
    import graphs.paradigms
    import graphs.rwr_plus
    import graphs.rwr_plus_text
    import graphs.wonderland  # noqa: F401  (importing the families registers their strategies)

    _plugins.load_once(_register_plugin)


def strategy_names() -> list[str]:
    _load()
    return list(_STRATEGIES)


def get_strategy(name: str) -> StrategyInfo:
    _load()
    try:
        return _STRATEGIES[name]
    except KeyError:
        raise StrategyError(f"unknown strategy {name!r}; strategies: {', '.join(_STRATEGIES)}") from None
