"""Symbolic input (Vaishnav & Tammet 2026, arXiv 2604.21346: the Componential-Grammatical paradigm).

The cognitive paradigms' query task with every image replaced by symbols: a text model is given
each context image and the query as symbols, never as pixels, and states the rule and the query's
class. The symbols are Bongard-LOGO's action programs (the strokes that drew the image, from the
dataset's `<type>_action_programs.json`), as the authors' action strings or read out in words (the
paper's input-format ablation); where a dataset has no programs, a structured description of each
image by a describer (the componential analysis of the 2025 paper; the perception agent offline).
Run beside `direct-rule-learning` on the same problems and model, `bongard compare` puts pixels
beside symbols (the paper's matched task definitions).

Only the paper's abstract and introduction could be read here: they state the inputs and the
comparison, not the prompt, the decoding or the attempts, so the reasoning call follows the 2025
paper's componential stage 2 (App. A.5.3.2: the same fields, temperature 0), as the card says.
"""

from __future__ import annotations

import json
from typing import Any, Literal, cast

from pydantic import Field

from agents.prompt_library import prompt_family
from datasets_io.loaders.logo import ACTION_PROGRAMS, Shapes, program_words
from datasets_io.problem import BongardProblem
from graphs.blocks.describe_first import (
    DescribedState,
    DescribeInputs,
    Describer,
    Description,
    as_text,
    describe_first,
    describe_inputs,
    described_details,
    descriptions_of,
    notes_extra,
)
from graphs.blocks.queries import (
    QueryInputs,
    QueryState,
    QueryVerdict,
    each_query,
    prepare_queries,
    query_answer,
    query_result,
)
from graphs.nodes import Ctx, ask
from graphs.registry import Graph, Preparation, Shape, StrategyError, StrategyOptions, family_strategy
from graphs.strategies.paradigms import FAMILY as PARADIGMS_FAMILY
from graphs.strategies.paradigms import PARADIGMS_DECODING, ImageDescription

FAMILY = prompt_family("symbolic", "graphs")
PAPER = "Vaishnav & Tammet 2026, Symbolic Grounding Reveals Representational Bottlenecks (arXiv 2604.21346)"
Symbols = Literal["programs", "strokes", "descriptions"]
PROGRAM_PROMPTS: dict[str, str] = {"programs": "reason_over_programs", "strokes": "reason_over_strokes"}
PROGRAMS_SOURCE = "the dataset's action programs"
"""Who 'wrote' the panel texts when they are the dataset's programs (the answer keeps it)."""


class SymbolicOptions(StrategyOptions):
    symbols: Literal["auto", "programs", "strokes", "descriptions"] = Field(
        default="auto",
        description="what stands for each image: programs (Bongard-LOGO's action strings), strokes (the "
        "programs in words), descriptions (a describer's structured description); auto: programs where "
        "the problem has them, else descriptions",
    )
    descriptions_from: str | None = Field(
        default=None, description="with symbols=descriptions: a run whose descriptions are used"
    )


class SymbolicInputs(QueryInputs, DescribeInputs):
    symbols: Symbols


class SymbolicState(QueryState, DescribedState, total=False):
    pass


def symbols_for(chosen: str, metadata: Any) -> Symbols:
    """What the run shows for each image of a problem with this metadata."""
    if chosen != "auto":
        return cast(Symbols, chosen)
    return "programs" if ACTION_PROGRAMS in metadata else "descriptions"


def _prepare(given: Preparation[SymbolicOptions]) -> SymbolicInputs:
    problem = given.problem
    symbols = symbols_for(given.options.symbols, problem.metadata)
    queries = prepare_queries(problem)
    refs = [panel.ref for panel in problem.context_panels] + queries["queries"]
    if symbols == "descriptions":
        return {**queries, "symbols": symbols, **describe_inputs(given, refs)}
    if given.options.descriptions_from is not None:
        raise StrategyError("descriptions_from needs -S symbols=descriptions")
    programs = problem.metadata.get(ACTION_PROGRAMS)
    if not isinstance(programs, dict):
        raise StrategyError(
            f"{problem.key} has no action programs (Bongard-LOGO folders with <type>_action_programs.json "
            "have them): use -S symbols=descriptions"
        )
    texts: dict[str, Description] = {ref: _program_text(cast(Shapes, programs[ref]), symbols) for ref in refs}
    return {
        **queries,
        "symbols": symbols,
        "described": [],
        "descriptions_from": {"describer": PROGRAMS_SOURCE, "panels": texts},
    }


def _program_text(program: Shapes, symbols: Symbols) -> str:
    return json.dumps(program) if symbols == "programs" else program_words(program)


def _listing(texts: list[str]) -> str:
    return "\n".join(f"{number}. {text}" for number, text in enumerate(texts, 1))


async def _reason(state: SymbolicState, runtime: Ctx[SymbolicInputs]) -> SymbolicState:
    """Text only: both sides' symbols and the query's -> the rule and the query's class."""
    item, ref = runtime.context, state["query"]
    problem: BongardProblem = item.problem
    descriptions = descriptions_of(item, state)
    panels = descriptions["panels"]
    left = _listing([as_text(panels[p.ref]) for p in problem.left])
    right = _listing([as_text(panels[p.ref]) for p in problem.right])
    counts = {"positives": len(problem.left), "negatives": len(problem.right)}
    symbols = item.inputs["symbols"]
    if symbols == "descriptions":
        text = item.prompts.fill(
            PARADIGMS_FAMILY,
            "reason_over_descriptions",
            positive_descriptions=left,
            negative_descriptions=right,
            query_description=as_text(panels[ref]),
            **counts,
        )
    else:
        text = item.prompts.fill(
            FAMILY,
            PROGRAM_PROMPTS[symbols],
            positive_programs=left,
            negative_programs=right,
            query_program=as_text(panels[ref]),
            **counts,
        )
    reply = await ask(
        item,
        "reasoner",
        text,
        task="classify",
        conversation=f"query {ref}",
        schema=QueryVerdict,
        extra={"test_panels": [ref], **notes_extra(descriptions)},
    )
    return {"queries": [query_result(ref, reply)]}


async def _answer(state: SymbolicState, runtime: Ctx[SymbolicInputs]) -> SymbolicState:
    item = runtime.context
    return {
        "answer": query_answer(item, state, symbols=item.inputs["symbols"], **described_details(item, state))
    }


def _count(shape: Shape[SymbolicOptions]) -> int:
    described = symbols_for(shape.options.symbols, shape.metadata) == "descriptions"
    return shape.context + 2 * shape.tests if described else shape.tests


symbolic_strategy = family_strategy(
    family=FAMILY,
    paper=PAPER,
    decoding=PARADIGMS_DECODING,
    needs_test_panels=True,
    card={
        "attempts": "not stated in what could be read (the abstract and introduction): 1 run at "
        "temperature 0, the 2025 paper's (App. A.4.2)",
        "scoring": "per query accuracy, as the cognitive paradigms score it (App. A.4.3); the paper reports "
        "accuracy per Bongard-LOGO type (free-form, basic, abstract) against a VLM on the images",
    },
)


@symbolic_strategy(
    "symbolic-rule-learning",
    section="abstract, Sec. 1 (the C-G paradigm: action programs or structured descriptions as input); "
    "its prompt is not in what could be read, so the 2025 paper's App. A.5.3.2 is followed",
    roles=("describer", "reasoner"),
    text_only_roles=("reasoner",),
    notes_from="describer",
    calls="1 text-only call per query over both sides' symbols; with symbols=descriptions (auto, where a "
    "problem has no action programs) 1 structured description call per context and query image first",
    count=_count,
    images="none with action programs (programs or strokes: JSON or words per image); with descriptions "
    "1 image per describer call (12 context images, each query), none in the reasoning call",
    contexts="none shared: each query's reasoning call afresh (and each description call)",
    options=SymbolicOptions,
    prepare=_prepare,
    reuses={"descriptions_from": ("descriptions", "describer")},
)
def symbolic_rule_learning() -> Graph:
    return describe_first(
        SymbolicState,
        Describer(PARADIGMS_FAMILY, ImageDescription),
        ("reason", _reason),
        each_query("reason"),
        _answer,
    )
