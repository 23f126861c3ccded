"""Strategies by name: what each one is, the options it takes, and how it prepares a problem.

A strategy is a function returning a compiled LangGraph graph, registered with
`@strategy(...)` where it is defined. The built-in families are modules named by
entry points of the group `bongard_agents.strategies` (see pyproject.toml), the
same path a third-party package takes; a package may also name a `StrategyInfo`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args, get_origin

from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from datasets_io.errors import BongardError, did_you_mean
from datasets_io.label_tables import LabelTable
from datasets_io.plugins import Registry, UnknownName
from datasets_io.problem import BongardProblem, Concept
from judges.styles import JudgeStyle

if TYPE_CHECKING:
    from datasets_io.problem import ProblemSummary

ENTRY_POINT_GROUP = "bongard_agents.strategies"


class StrategyError(BongardError, ValueError):
    """An unknown strategy, a bad option, or a problem a strategy cannot take; the message says why."""


class StrategyOptions(BaseModel):
    """A strategy's options (`-S key=value`); subclasses add fields with descriptions and defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _command_line_literals(cls, data: Any) -> Any:
        """`-S concepts=8` arrives as the text "8": a field taking one of some numbers takes 8."""
        if not isinstance(data, dict):
            return data
        chosen = dict(data)
        for key, value in data.items():
            field = cls.model_fields.get(key)
            if field is not None and isinstance(value, str) and get_origin(field.annotation) is Literal:
                chosen[key] = next((m for m in get_args(field.annotation) if str(m) == value), value)
        return chosen


class NoOptions(StrategyOptions):
    """For strategies that take none."""


@dataclass(frozen=True)
class DatasetContext:
    """What a strategy may know of the rest of the dataset: every concept, in dataset order, and the
    authors' concept table where the dataset has one."""

    concepts: Sequence[tuple[str, Concept]] = ()
    labels: LabelTable | None = None

    @classmethod
    def of(
        cls, problems: Iterable[BongardProblem | ProblemSummary], labels: LabelTable | None = None
    ) -> DatasetContext:
        return cls(tuple((p.id, p.concept) for p in problems if p.concept is not None), labels)

    def label_table(self) -> LabelTable:
        """The authors' table, else the dataset's own concepts in dataset order as one."""
        own = "the dataset's problems, in dataset order"
        return self.labels or LabelTable.of_problems(self.concepts, own)

    def other_concepts(self, own: Concept) -> list[Concept]:
        """Every distinct concept of the dataset other than `own`, in dataset order: distractors."""
        seen = {(own.left, own.right)}
        others = []
        for _, concept in self.concepts:
            if (concept.left, concept.right) not in seen:
                seen.add((concept.left, concept.right))
                others.append(concept)
        return others


def seeded_random(seed: int, problem: BongardProblem, purpose: str) -> random.Random:
    """A generator that depends only on the seed, the problem and what it is for."""
    return random.Random(f"{seed}:{problem.key}:{purpose}")


@dataclass(frozen=True)
class Reused:
    """A result taken from an earlier run for this problem: what, from which run and agent."""

    value: Any
    run: str
    agent: str


WHOLE_ANSWERS = "*"
"""A `reuses` key: the option names stored runs, comma-separated, whose whole answers are reused
(a mixture's members): `Reused.value` is the list of their `MemberAnswer`s for the problem."""


@dataclass(frozen=True)
class MemberAnswer:
    """What a member run answered on a problem, and what its calls cost (None: a price unknown)."""

    run: str
    label: str
    """`strategy · model`."""
    sides: dict[str, Any]
    correct: bool | None
    cost_usd: float | None
    text: str = ""
    """The answer as the judges read it (a stated rule), for mixtures of free-form answers."""


OptionsT = TypeVar("OptionsT", bound=StrategyOptions)


@dataclass(frozen=True)
class Shape(Generic[OptionsT]):
    """What the number of a problem's calls depends on: its context panels, its test panels, the
    strategy's options and what the loader says of the problem (whether it carries action programs)."""

    context: int
    tests: int
    options: OptionsT
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProtocolCard:
    """The paper's protocol beyond the call count: what a reader needs to compare a run with the
    paper's table (`bongard strategies NAME` and the protocol table of docs/strategies.md show it)."""

    images: str
    """Images per call: which calls carry the sheet, single panels or none."""
    contexts: str
    """Which calls share a context (one conversation), and which start afresh."""
    attempts: str
    """How many times the paper runs each problem, and how its tables combine the runs."""
    scoring: str
    """How the paper scores an answer."""


@dataclass(frozen=True)
class PaperProtocol:
    """One paper's version of a strategy that two papers define (issue 33): images-to-sides is the
    case study's Prompt 7 and Bongard-RWR+'s Prompts 9-10, each with its own decoding. A run takes
    the one named by `-S protocol=NAME`, else the one whose dataset formats include its dataset's,
    else the strategy's first; the run's stored options record which one it ran."""

    name: str
    paper: str
    section: str
    decoding: Mapping[str, Any] = field(default_factory=dict)
    formats: tuple[str, ...] = ()
    """The dataset formats whose default this protocol is."""


AUTO_PROTOCOL = "auto"


class ProtocolOption(StrategyOptions):
    """The `protocol` option of a strategy two papers define: `auto` picks by the dataset."""

    protocol: Literal["auto", "case-study", "rwr-plus"] = Field(
        default="auto",
        description="whose protocol to run: case-study (Małkiński et al.) or rwr-plus (Pawlonka et al.); "
        "auto: rwr-plus on bongard-rwr and bongard-rwr-plus data, case-study elsewhere",
    )


def pick_protocol(protocols: Sequence[PaperProtocol], chosen: str, dataset_format: str) -> PaperProtocol:
    """The protocol named, or for `auto` the one whose formats hold the dataset's, else the first."""
    if chosen != AUTO_PROTOCOL:
        return next(protocol for protocol in protocols if protocol.name == chosen)
    return next((p for p in protocols if dataset_format in p.formats), protocols[0])


@dataclass(frozen=True)
class Preparation(Generic[OptionsT]):
    """What `prepare` may use: the problem, the dataset's concepts, the seed, the options, and the
    results reused from earlier runs (by option name)."""

    problem: BongardProblem
    dataset: DatasetContext
    seed: int
    options: OptionsT
    reused: Mapping[str, Reused] = field(default_factory=dict)


Graph = CompiledStateGraph[Any, Any, Any, Any]


@dataclass(frozen=True)
class StrategyInfo(Generic[OptionsT]):
    name: str
    family: str
    paper: str
    section: str
    roles: tuple[str, ...]
    calls: str
    """Calls per problem, as the paper's protocol prescribes."""
    build: Callable[[], Graph]
    options: type[OptionsT]
    prepare: Callable[[Preparation[OptionsT]], Any] | None = None
    """The strategy's seeded inputs for one problem (its runtime context's `inputs`)."""
    needs_test_panels: bool = False
    recursion_limit: int = 25
    judged: bool = False
    """Free-form answers, scored by judges; otherwise each answer scores itself (`correct`)."""
    judge_style: JudgeStyle = "strict"
    """The judge prompt the paper's judges used (`bongard judge --style` overrides it)."""
    decoding: Mapping[str, Any] = field(default_factory=dict)
    """The sampling parameters the paper states (`temperature`, `max_tokens`), sent unless `-M`
    says otherwise; empty where the paper used each API's defaults."""
    card: ProtocolCard | None = None
    """The paper's protocol in words; every built-in strategy has one, a plugin may leave it out."""
    count: Callable[[Shape[OptionsT]], int] | None = None
    """`calls` as a number for a problem's shape (a first run's: reused results, a cache and
    re-asks make fewer or more); every built-in strategy states it and the tests hold its runs to
    it; a plugin may leave it out."""
    protocols: tuple[PaperProtocol, ...] = ()
    """The papers' versions where two papers define the strategy (its options then take `protocol`);
    the first is the default on a dataset no other one names."""
    text_only_roles: tuple[str, ...] = ()
    """Roles whose every call shows no image (reasoning over symbols): an agent that needs images
    (`Provider.needs_images`, the perception agent) is refused for them before the run, unless it
    also takes the `notes_from` role."""
    notes_from: str | None = None
    """The role whose machine notes the text-only roles' calls carry (`extra["notes"]`): an agent
    that needs images reads the panels from the notes its own kind wrote there (the perception
    agent describing, then reasoning over its descriptions)."""
    reads_label_table: bool = False
    """Whether `prepare` reads the dataset's concept table (`DatasetContext.labels`); the runner
    reads the table only then, so a damaged one costs other strategies nothing."""
    reuses: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Option naming an earlier run -> (the `Answer.details` key taken from that run's answer for
    the same problem, the role that wrote it), e.g. `rules_from` -> (`rule_extraction`, `reasoner`);
    the runner looks it up and hands `prepare` a `Reused` value under the option's name."""

    def calls_for(self, problem: BongardProblem, options: Mapping[str, Any] | None = None) -> int | None:
        """How many calls a first run of `problem` makes under `options` (`count`; None unstated)."""
        if self.count is None:
            return None
        shape = Shape(
            context=len(problem.left) + len(problem.right),
            tests=len(problem.test_left) + len(problem.test_right),
            options=self.parse_options(options or {}),
            metadata=problem.metadata,
        )
        return self.count(shape)

    def protocol_for(self, options: StrategyOptions, dataset_format: str) -> PaperProtocol | None:
        """The paper protocol a run of these options on a dataset of this format follows (None: the
        strategy has one paper, the one it names)."""
        if not self.protocols:
            return None
        return pick_protocol(self.protocols, getattr(options, "protocol", AUTO_PROTOCOL), dataset_format)

    def decoding_for(self, options: StrategyOptions, dataset_format: str) -> Mapping[str, Any]:
        """The decoding the paper whose protocol the run follows states."""
        protocol = self.protocol_for(options, dataset_format)
        return protocol.decoding if protocol is not None else self.decoding

    def parse_options(self, given: Mapping[str, Any]) -> OptionsT:
        """`-S` values (strings or typed) -> the options model, refused in one line when wrong."""
        known = list(self.options.model_fields)
        for key in given:
            if key not in known:
                takes = ", ".join(known) or "none"
                raise StrategyError(
                    f"{self.name} has no option {key}{did_you_mean(key, known)}; its options: {takes}"
                )
        try:
            return self.options.model_validate(dict(given))
        except ValidationError as error:
            problem = error.errors()[0]
            key = ".".join(map(str, problem["loc"]))
            raise StrategyError(
                f"{self.name} option {key}={given.get(key)!r}: {problem['msg']} ({self.describe_option(key)})"
            ) from None

    def departures(self) -> list[tuple[str, str]]:
        """(option, what setting it does beyond the paper) for every option marked as a departure
        (`Field(json_schema_extra={"departure": ...})`); off by default, recorded with the run."""
        return [
            (key, str(extra["departure"]))
            for key, described in self.options.model_fields.items()
            if isinstance(extra := described.json_schema_extra, dict) and "departure" in extra
        ]

    def describe_option(self, key: str) -> str:
        described = self.options.model_fields[key]
        default = described.get_default(call_default_factory=True)
        return f"{described.description or key}; default {default!r}"


STRATEGIES: Registry[StrategyInfo[Any]] = Registry(ENTRY_POINT_GROUP, "strategy", StrategyInfo)


StrategyDecorator = Callable[[Callable[[], Graph]], Callable[[], Graph]]


def strategy(
    name: str,
    *,
    family: str,
    paper: str,
    section: str,
    roles: tuple[str, ...],
    calls: str,
    options: type[StrategyOptions] = NoOptions,
    prepare: Callable[[Preparation[Any]], Any] | None = None,
    needs_test_panels: bool = False,
    recursion_limit: int = 25,
    judged: bool = False,
    judge_style: JudgeStyle = "strict",
    decoding: Mapping[str, Any] | None = None,
    card: ProtocolCard | None = None,
    count: Callable[[Shape[Any]], int] | None = None,
    protocols: tuple[PaperProtocol, ...] = (),
    text_only_roles: tuple[str, ...] = (),
    notes_from: str | None = None,
    reads_label_table: bool = False,
    reuses: dict[str, tuple[str, str]] | None = None,
) -> StrategyDecorator:
    """Decorator: register the graph builder it wraps as strategy `name`. Every field is a typed
    keyword (`StrategyInfo` says what each means), so a type checker catches a plugin's missing or
    misspelt one before it runs; options default to none."""

    def register(build: Callable[[], Graph]) -> Callable[[], Graph]:
        described: StrategyInfo[Any] = StrategyInfo(
            name=name,
            family=family,
            paper=paper,
            section=section,
            roles=roles,
            calls=calls,
            build=build,
            options=options,
            prepare=prepare,
            needs_test_panels=needs_test_panels,
            recursion_limit=recursion_limit,
            judged=judged,
            judge_style=judge_style,
            decoding=dict(decoding or {}),
            card=card,
            count=count,
            protocols=protocols,
            text_only_roles=text_only_roles,
            notes_from=notes_from,
            reads_label_table=reads_label_table,
            reuses=dict(reuses or {}),
        )
        STRATEGIES.register(name, described, source=build.__module__)
        return build

    return register


def family_strategy(
    *, card: Mapping[str, str] | None = None, **shared: Any
) -> Callable[..., StrategyDecorator]:
    """`@strategy` for one family: `shared` fills the fields its strategies have in common (family,
    paper, decoding, judged, ...) and `card` the protocol card's (attempts, scoring), so each
    decorator says only what differs, its own `images` and `contexts` among them."""

    def decorate(name: str, *, images: str, contexts: str, **info: Any) -> StrategyDecorator:
        fields: dict[str, str] = {**(card or {})}
        fields |= {key: info.pop(key) for key in ("attempts", "scoring") if key in info}
        described = ProtocolCard(images=images, contexts=contexts, **fields)
        return strategy(name, **{**shared, **info, "card": described})

    return decorate


def strategy_names() -> list[str]:
    return STRATEGIES.names()


def get_strategy(name: str) -> StrategyInfo[Any]:
    try:
        return STRATEGIES.get(name)
    except UnknownName as error:
        raise StrategyError(str(error)) from None
