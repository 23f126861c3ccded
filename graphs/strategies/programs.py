"""Rules that run: a rule is a program in the toolkit's rule language (`graphs.programs`), checked on
the context panels before it classifies the test panels.

Grounding (Wüst et al. 2025, Vision-Language Programs, arXiv 2511.18964): each panel, in its own
context, is turned into symbols, numbers by name (the perception agent's measurements offline; a
model asked to measure, VLP-style, otherwise). Then a rule:

- program-search, the model-free baseline: an enumerative search over the language (threshold
  conditions, alone or two joined), the simplest rule that separates the context panels
  (`graphs.programs.search`);
- program-synthesis: a model proposes a program (as Langenfeld et al. 2026, arXiv 2602.03038, have
  an LLM write one for a hypothesised rule), the toolkit runs it on every context panel and names
  the panels it misplaces (or why it could not be read), and the model tries again, up to
  `-S turns=N` in one conversation; it stops at the first program that separates the sides.

Decision (VLP): the best rule, the one misplacing fewest context panels (the earliest among
equals), classifies each test panel: true is left. The answer keeps the program, its words, its
context accuracy and every proposal.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AIMessage
from pydantic import BaseModel, Field

from agents.call import AgentReply
from agents.prompt_library import prompt_family
from datasets_io.problem import Side
from graphs.answer import AnswerParts
from graphs.blocks.describe_first import (
    DescribedState,
    DescribeInputs,
    Describer,
    describe_first,
    describe_inputs,
    descriptions_of,
)
from graphs.nodes import Conversation, Ctx, Item, ask, panel_sources, user_message
from graphs.programs.language import RuleError, parse_rule
from graphs.programs.search import Panel, Ranking, Scored, score, search
from graphs.registry import Graph, Preparation, StrategyOptions, family_strategy

FAMILY = prompt_family("programs", "graphs")
VLP = "Wüst et al. 2025, Synthesizing Visual Concepts as Vision-Language Programs (arXiv 2511.18964)"
SYNTHESIS = "Langenfeld et al. 2026 (arXiv 2602.03038) and Wüst et al. 2025 (VLP, arXiv 2511.18964)"
GROUNDER_PROMPT = "ground_panel"


class GroundedPanel(BaseModel):
    """One panel's symbols, and what each says where the grounder can say it."""

    symbols: dict[str, float]
    phrases: dict[str, str] = Field(default_factory=dict)


class ProposedRule(BaseModel):
    words: str
    program: str


class Proposal(TypedDict):
    """One turn of the synthesis loop: the program as proposed and how it did on the context."""

    words: str
    program: str
    reply: str
    wrong: list[str] | None
    """The context panels it misplaces; None when it could not be run."""
    error: str | None


class ProgramInputs(DescribeInputs):
    tests: list[str]
    turns: int
    """Proposals at most (program-synthesis)."""
    ranking: Ranking
    """How program-search orders rules as accurate."""
    grounding: str


class SymbolVocabulary(BaseModel):
    """What a rule about the task could mention (VLP's symbol grounding)."""

    objects: list[str]
    properties: list[str]
    actions: list[str]


class ProgramState(DescribedState, total=False):
    proposals: Annotated[list[Proposal], operator.add]


class GroundingOptions(StrategyOptions):
    grounding: Literal["measured", "vocabulary"] = Field(
        default="measured",
        description="measured: the grounder measures each panel in names of its own (the perception agent's "
        "columns); vocabulary: VLP's way, a call with the context images proposes objects, properties and "
        "actions, then each panel is asked about every one",
    )


class SearchOptions(GroundingOptions):
    ranking: Ranking = Field(
        default="simplest",
        description="among rules as accurate on the context panels, simplest: fewest conditions, widest "
        "margin; vlp: most probable under VLP's symbol weights (its naive_weighted grammar)",
    )


class SynthesisOptions(GroundingOptions):
    turns: int = Field(
        default=3, ge=1, le=10, description="proposals at most, each after the last one's feedback"
    )


def _prepare(given: Preparation[GroundingOptions]) -> ProgramInputs:
    problem = given.problem
    refs = [panel.ref for panel in problem.context_panels + problem.test_panels]
    turns = given.options.turns if isinstance(given.options, SynthesisOptions) else 0
    ranking = given.options.ranking if isinstance(given.options, SearchOptions) else "simplest"
    tests = [panel.ref for panel in problem.test_panels]
    return {
        "tests": tests,
        "turns": turns,
        "ranking": ranking,
        "grounding": given.options.grounding,
        **describe_inputs(given, refs),
    }


# --- grounding ------------------------------------------------------------------------------------

MOST_SYMBOLS = 8
"""Objects, properties and actions each, at most, in a proposed vocabulary."""
KINDS = {
    "objects": ("object", "how many of them the image shows"),
    "properties": ("property", "1 if something in the image has this property, else 0"),
    "actions": ("action", "1 if this is going on in the image, else 0"),
}


def symbol_name(kind: str, word: str) -> str | None:
    """`cake` among the objects -> `object_cake`: a name of the rule language, or None if nothing is left."""
    cleaned = re.sub(r"[^a-z0-9]+", "_", word.lower()).strip("_")
    return f"{KINDS[kind][0]}_{cleaned}" if cleaned else None


async def _propose_symbols(state: ProgramState, runtime: Ctx[ProgramInputs]) -> ProgramState:
    """VLP's symbol grounding: one call with the context images proposes the vocabulary (only where
    panels are to be grounded the vocabulary way)."""
    item = runtime.context
    if item.inputs["grounding"] != "vocabulary" or not item.inputs["described"]:
        return {}
    problem = item.problem
    text = item.prompts.fill(
        FAMILY,
        "propose_symbols",
        count=len(problem.context_panels),
        positives=len(problem.left),
        negatives=len(problem.right),
        most=MOST_SYMBOLS,
    )
    reply = await ask(
        item,
        "describer",
        text,
        panel_sources(item, problem.context_panels),
        task="propose",
        conversation="vocabulary",
        schema=SymbolVocabulary,
    )
    proposed = reply.parsed or {}
    vocabulary: dict[str, str] = {}
    for kind, (_, question) in KINDS.items():
        for word in list(proposed.get(kind, []))[:MOST_SYMBOLS]:
            name = symbol_name(kind, str(word))
            if name is not None:
                vocabulary.setdefault(name, f"{word}: {question}")
    return {"describe_with": {"vocabulary": vocabulary}}


def _grounding_question(item: Item[Any], state: Mapping[str, Any]) -> str:
    vocabulary = state.get("describe_with", {}).get("vocabulary")  # symbol name -> what is asked
    if not vocabulary:
        return item.prompts.fill(FAMILY, GROUNDER_PROMPT)
    listed = "\n".join(f"- {name} ({asked})" for name, asked in vocabulary.items())
    return item.prompts.fill(FAMILY, "ground_with_vocabulary", symbols=listed)


def _symbols(found: Any) -> dict[str, float]:
    """A grounded panel's symbols; an unparsed reply grounds nothing (every symbol reads as 0)."""
    raw = found.get("symbols", {}) if isinstance(found, dict) else {}
    return {str(name): float(value) for name, value in raw.items() if isinstance(value, int | float)}


class Grounded(TypedDict):
    panels: dict[str, Panel]
    tests: dict[str, dict[str, float]]
    vocabulary: list[str]
    phrases: dict[str, str]


def _grounded(item: Item[ProgramInputs], state: ProgramState) -> Grounded:
    """The context panels as the rule sees them, the test panels' symbols, and the vocabulary: the
    proposed one (grounding=vocabulary, with what each symbol asks), else every symbol a context
    panel has, in the order they first appear."""
    found = descriptions_of(item, state)["panels"]
    panels = {p.ref: Panel(p.side, _symbols(found.get(p.ref))) for p in item.problem.context_panels}
    proposed: dict[str, str] = state.get("describe_with", {}).get("vocabulary", {})
    vocabulary = list(proposed) or list(dict.fromkeys(n for panel in panels.values() for n in panel.symbols))
    phrases: dict[str, str] = dict(proposed)
    for described in found.values():
        if isinstance(described, dict) and isinstance(described.get("phrases"), dict):
            phrases |= {str(k): str(v) for k, v in described["phrases"].items()}
    tests = {ref: _symbols(found.get(ref)) for ref in item.inputs["tests"]}
    return {"panels": panels, "tests": tests, "vocabulary": vocabulary, "phrases": phrases}


def _answer(
    item: Item[ProgramInputs], grounded: Grounded, best: Scored | None, **details: Any
) -> AnswerParts:
    """The test panels' sides by the rule (true: left) against the truth."""
    sides: dict[str, Side | None] = {
        ref: (("left" if best.rule.holds(symbols) else "right") if best is not None else None)
        for ref, symbols in grounded["tests"].items()
    }
    truth = {ref: item.panel(ref).side for ref in sides}
    program = str(best.rule) if best is not None else None
    return AnswerParts(
        text=program or "no program could be run",
        sides=sides,
        expected={"sides": truth},
        correct=sides == truth,
        parse_status="ok" if best is not None else "failed",
        parse_error=None if best is not None else "no proposed program could be run",
        details={
            "program": program,
            "context_correct": best.correct if best is not None else None,
            "context_panels": len(grounded["panels"]),
            "misplaced": list(best.wrong) if best is not None else None,
            **details,
        },
    )


# --- program-search -------------------------------------------------------------------------------


async def _search(state: ProgramState, runtime: Ctx[ProgramInputs]) -> ProgramState:
    item = runtime.context
    grounded = _grounded(item, state)
    ranking = item.inputs["ranking"]
    found = search(grounded["panels"], grounded["vocabulary"], ranking)
    return {"answer": _answer(item, grounded, found, search="enumerative", ranking=ranking)}


# --- program-synthesis ----------------------------------------------------------------------------


def _listed(grounded: Grounded, side: Side) -> str:
    return "\n".join(
        f"{ref}: {json.dumps(panel.symbols)}"
        for ref, panel in grounded["panels"].items()
        if panel.side == side
    )


def _first_question(item: Item[ProgramInputs], grounded: Grounded) -> str:
    vocabulary = "\n".join(
        f"- {name}" + (f": {grounded['phrases'][name]}" if name in grounded["phrases"] else "")
        for name in grounded["vocabulary"]
    )
    return item.prompts.fill(
        FAMILY,
        "propose_rule",
        per_side=item.problem.panels_per_side,
        vocabulary=vocabulary,
        left_panels=_listed(grounded, "left"),
        right_panels=_listed(grounded, "right"),
        turns=item.inputs["turns"],
    )


def _feedback(item: Item[ProgramInputs], proposal: Proposal, panels: int) -> str:
    if proposal["wrong"] is None:
        return item.prompts.fill(FAMILY, "rule_unreadable", error=proposal["error"] or "")
    wrong = proposal["wrong"]
    named = ", ".join(wrong[:-1]) + f" and {wrong[-1]}" if len(wrong) > 1 else wrong[0]
    return item.prompts.fill(FAMILY, "rule_feedback", program=proposal["program"], panels=panels, wrong=named)


def _proposal(reply: AgentReply, grounded: Grounded) -> Proposal:
    parsed = reply.parsed or {}
    words, program = str(parsed.get("words", "")), str(parsed.get("program", ""))
    if reply.parsed is None:
        error = reply.parse_error or "the reply is not the JSON asked for"
        return Proposal(words=words, program=program, reply=reply.text, wrong=None, error=error)
    try:
        rule = parse_rule(program, grounded["vocabulary"])
    except RuleError as refused:
        return Proposal(words=words, program=program, reply=reply.text, wrong=None, error=str(refused))
    wrong = list(score(rule, grounded["panels"]).wrong)
    return Proposal(words=words, program=str(rule), reply=reply.text, wrong=wrong, error=None)


async def _propose(state: ProgramState, runtime: Ctx[ProgramInputs]) -> ProgramState:
    """One turn: the conversation so far rebuilt from the state's proposals, then the next question."""
    item = runtime.context
    grounded = _grounded(item, state)
    earlier = state.get("proposals", [])
    questions = [_first_question(item, grounded)]
    questions += [_feedback(item, proposal, len(grounded["panels"])) for proposal in earlier]
    chat = Conversation(item, "reasoner", "synthesis")
    for question, proposal in zip(questions, earlier, strict=False):
        chat.messages += [user_message(question), AIMessage(content=proposal["reply"])]
        chat.turns += 1
    context = {ref: {"side": p.side, "symbols": p.symbols} for ref, p in grounded["panels"].items()}
    reply = await chat.ask(
        questions[len(earlier)],
        task="propose",
        schema=ProposedRule,
        extra={"symbols": context, "tried": [proposal["program"] for proposal in earlier]},
    )
    return {"proposals": [_proposal(reply, grounded)]}


def _again(state: ProgramState, runtime: Ctx[ProgramInputs]) -> bool:
    """Another turn: the last program misplaced a context panel and turns are left."""
    proposals = state.get("proposals", [])
    return proposals[-1]["wrong"] != [] and len(proposals) < runtime.context.inputs["turns"]


async def _decide(state: ProgramState, runtime: Ctx[ProgramInputs]) -> ProgramState:
    """The proposal misplacing fewest context panels (the earliest among equals) classifies the tests."""
    item = runtime.context
    grounded = _grounded(item, state)
    proposals = state.get("proposals", [])
    runnable = [parse_rule(p["program"], grounded["vocabulary"]) for p in proposals if p["wrong"] is not None]
    scored = [score(rule, grounded["panels"]) for rule in runnable]
    best = max(scored, key=lambda found: found.correct) if scored else None
    kept = [dict(p) for p in proposals]
    words = next((p["words"] for p in proposals if best is not None and p["program"] == str(best.rule)), "")
    return {"answer": _answer(item, grounded, best, words=words, proposals=kept)}


GROUNDER = Describer(FAMILY, GroundedPanel, task="ground", question=_grounding_question)
FIRST = ("vocabulary", _propose_symbols)
program_strategy = family_strategy(family=FAMILY, needs_test_panels=True, prepare=_prepare)


@program_strategy(
    "program-search",
    paper=VLP,
    section="the method: symbol grounding, program search, the best program applied; an exhaustive "
    "search of rules of one or two threshold conditions over the grounded symbols, ranked by accuracy, "
    "then (-S ranking=vlp) by VLP's naive_weighted probability, as its heap search finds them",
    roles=("describer",),
    calls="1 grounding call per context and test panel, each in its own context; the search makes none",
    count=lambda shape: shape.context + shape.tests + (shape.options.grounding == "vocabulary"),
    images="1 panel per grounding call; with -S grounding=vocabulary first 1 call with the 12 context "
    "images proposing the symbols",
    contexts="none shared: each panel grounded afresh",
    attempts="1 run; VLP reports accuracy over the test images of each task",
    scoring="both test panels on their sides by the rule found on the context panels (true: left)",
    options=SearchOptions,
)
def program_search() -> Graph:
    return describe_first(ProgramState, GROUNDER, ("search", _search), first=FIRST)


@program_strategy(
    "program-synthesis",
    paper=SYNTHESIS,
    section="VLP's grounding, its decision, Langenfeld et al.'s program written by a model; the rule "
    "language and the feedback loop are this toolkit's, beyond both papers",
    roles=("describer", "reasoner"),
    calls="1 grounding call per context and test panel, each in its own context, then up to -S turns=N "
    "(default 3) text-only turns of one conversation, stopping at a program that separates the sides",
    count=lambda shape: (
        shape.context + shape.tests + shape.options.turns + (shape.options.grounding == "vocabulary")
    ),
    images="1 panel per grounding call (with -S grounding=vocabulary first 1 call with the 12 context "
    "images proposing the symbols); none in the synthesis conversation",
    contexts="each panel grounded afresh; the proposals one conversation, each feedback turn naming the "
    "context panels the last program misplaced",
    attempts="1 run",
    scoring="both test panels on their sides by the best proposed program (fewest misplaced context panels)",
    options=SynthesisOptions,
)
def program_synthesis() -> Graph:
    return describe_first(
        ProgramState, GROUNDER, ("propose", _propose), finish=_decide, again=_again, first=FIRST
    )
