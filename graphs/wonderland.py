"""The Bongard-in-Wonderland tasks (Wüst et al., ICML 2025, Sec. 3, App. A.1).

open-ended (Task 1): the sheet -> a rule per set, judged; run with
`--attempts 3`, a problem is solved when most attempts are accepted.
multiple-choice (Task 1.1): the sheet and numbered rule pairs -> an id.
concept-probe (Task 2): an author agent writes a probe from the true concept
pair; each panel is then asked alone which concept it shows. hypotheses
(Task 3): the sheet -> many candidate rule pairs, judged one by one.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send
from pydantic import BaseModel

from agents.call import AgentReply
from agents.prompt_library import prompt_family
from datasets_io.problem import BongardProblem
from graphs.answer import Answer
from graphs.nodes import (
    Graph,
    SolveState,
    call_agent,
    fan_out_graph,
    free_answer,
    label_answer,
    linear_graph,
    needs_concept,
    panel_by_ref,
    panel_source,
    problem_of,
    runtime_of,
    sheet_source,
    user_message,
)
from graphs.registry import DatasetContext, Reused, StrategyError, seeded_random, strategy

WONDERLAND = "Wüst et al., ICML 2025 (Bongard in Wonderland)"
FAMILY = prompt_family("wonderland", "graphs")
SHORT_CHOICES = 10
HYPOTHESES = 20
WORKED_PROBES = {
    "spiral": ("Clockwise spiral", "Counterclockwise spiral"),
    "cavity": (
        "A circle is at the left of the cavity if you look from inside the figure",
        "A circle is at the right of the cavity if you look from inside the figure",
    ),
}
"""The concept pairs of BP#16 and BP#55, whose probes we wrote as the author's worked examples."""


def _sheet_values(problem: BongardProblem) -> dict[str, int]:
    return {"total": 2 * problem.panels_per_side, "per_side": problem.panels_per_side}


# --- Task 1: open-ended ----------------------------------------------------------------------------


class SetRules(BaseModel):
    analysis: str
    set_a_rule: str
    set_b_rule: str


def rules_answer(strategy: str, problem: BongardProblem, reply: AgentReply) -> dict[str, Any]:
    """The two set rules as `Left:` / `Right:` lines for the judges; free text when unparsed."""
    if reply.parsed is None:
        return free_answer(strategy, problem, reply)
    left, right = reply.parsed["set_a_rule"], reply.parsed["set_b_rule"]
    return Answer(
        strategy=strategy,
        problem=problem.key,
        text=f"Left: {left}\nRight: {right}",
        left_rule=left,
        right_rule=right,
        parse_status="ok",
        details={"analysis": reply.parsed.get("analysis", "")},
    ).model_dump(mode="json", exclude={"trace"})


async def _open_ended(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    sheet = sheet_source(runtime, problem)
    text = runtime.prompts.fill(FAMILY, "open_ended", **_sheet_values(problem))
    reply, trace = await call_agent(
        runtime, "reasoner", [user_message(text, [sheet])], task="answer", images=[sheet],
        conversation="solve", step=0, schema=SetRules,
    )  # fmt: skip
    return {"trace": [trace], "answer": rules_answer("open-ended", problem, reply)}


@strategy(
    "open-ended",
    family=FAMILY,
    paper=WONDERLAND,
    section="Sec. 3 Task 1, Listing 1",
    roles=("reasoner",),
    calls="1 call: the sheet -> a Set A rule and a Set B rule (run with --attempts 3; judged)",
)
def open_ended() -> Graph:
    return linear_graph(("solve", _open_ended))


# --- Task 1.1: multiple choice -----------------------------------------------------------------------


class OptionChoice(BaseModel):
    analysis: str
    option: int


def _prepare_choice(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    own = needs_concept(problem)
    pool = context.other_concepts(own)
    choices = str(options.get("choices", "all"))
    if choices == "all":
        candidates = [own, *pool]
    elif choices.isdigit() and int(choices) >= 2:
        if len(pool) < int(choices) - 1:
            raise StrategyError(
                f"the dataset has {len(pool)} other distinct concepts; {int(choices) - 1} are needed"
            )
        candidates = [own, *seeded_random(seed, problem, "multiple-choice").sample(pool, int(choices) - 1)]
    else:
        raise StrategyError(f"multiple-choice takes choices=all or a number of at least 2, not {choices!r}")
    seeded_random(seed, problem, "multiple-choice order").shuffle(candidates)
    listed = [{"id": n, "left": c.left, "right": c.right or ""} for n, c in enumerate(candidates, 1)]
    return {"options": listed, "label": candidates.index(own) + 1}


async def _choose(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    sheet = sheet_source(runtime, problem)
    listed = state["inputs"]["options"]
    lines = "\n".join(f"{o['id']}: {o['left']} | {o['right']}" for o in listed)
    text = runtime.prompts.fill(FAMILY, "multiple_choice", options=lines, **_sheet_values(problem))
    reply, trace = await call_agent(
        runtime, "reasoner", [user_message(text, [sheet])], task="select", images=[sheet],
        conversation="choose", step=0, schema=OptionChoice, extra={"options": listed},
    )  # fmt: skip
    answer = label_answer(
        "multiple-choice", problem, reply, "option", state["inputs"]["label"], options=len(listed)
    )
    return {"trace": [trace], "answer": answer}


@strategy(
    "multiple-choice",
    family=FAMILY,
    paper=WONDERLAND,
    section="Sec. 3 Task 1.1, Listing 2",
    roles=("reasoner",),
    calls="1 call: the sheet and numbered rule pairs (all of the dataset's, or 10) -> an option id",
    prepare=_prepare_choice,
    options={
        "choices": "all (every distinct rule pair of the dataset; default) or N: the true one and N-1 seeded"
    },
)
def multiple_choice() -> Graph:
    return linear_graph(("choose", _choose))


# --- Task 2: concept probes --------------------------------------------------------------------------


class ProbeDraft(BaseModel):
    probe: str


class ProbeAnswer(BaseModel):
    reasoning: str
    concept: Literal[1, 2]


def _prepare_probe(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    concept = needs_concept(problem)
    if concept.right is None:
        raise StrategyError(f"{problem.key} states no right-side concept to probe against")
    inputs: dict[str, Any] = {"concepts": [concept.left, concept.right]}
    reused = options.get("probes_from")
    if isinstance(reused, Reused):
        inputs["probe"] = {"from_run": reused.run, "author": reused.agent, **reused.value}
    return inputs


async def _author_probe(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """The author agent writes the probe from the true concepts, after our two worked probes."""
    if "probe" in state["inputs"]:
        return {}  # written in an earlier run
    runtime = runtime_of(config)
    first, second = state["inputs"]["concepts"]
    examples: dict[str, str] = {}
    for name, (a, b) in WORKED_PROBES.items():
        examples |= {f"{name}_first": a, f"{name}_second": b}
        examples[f"{name}_probe"] = runtime.prompts.fill(FAMILY, f"probe_example_{name}")
    text = runtime.prompts.fill(FAMILY, "probe_author", first=first, second=second, **examples)
    reply, trace = await call_agent(
        runtime, "author", [user_message(text)], task="generate", images=[], conversation="author", step=0,
        schema=ProbeDraft, extra={"concepts": [first, second]},
    )  # fmt: skip
    probe = {
        "text": reply.parsed["probe"] if reply.parsed else reply.text,
        "author": runtime.agent("author").spec,
    }
    return {"notes": [{"kind": "probe", "side": "probe", **probe}], "trace": [trace]}


def _probe(state: SolveState) -> dict[str, Any]:
    if "probe" in state["inputs"]:
        reused: dict[str, Any] = state["inputs"]["probe"]
        return reused
    return next(
        {"text": n["text"], "author": n["author"]} for n in state.get("notes", []) if n["kind"] == "probe"
    )


def _panel_sends(state: SolveState) -> list[Send]:
    return [
        Send("ask", {**state, "inputs": {**state["inputs"], "panel": panel.ref}})
        for panel in problem_of(state).context_panels
    ]


async def _ask_panel(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    """One panel, alone, with the probe: which of the two concepts does it show?"""
    runtime, problem = runtime_of(config), problem_of(state)
    panel = panel_by_ref(problem, state["inputs"]["panel"])
    first, second = state["inputs"]["concepts"]
    image = panel_source(runtime, problem, panel)
    text = runtime.prompts.fill(
        FAMILY, "probe_answer", probe=_probe(state)["text"], first=first, second=second
    )
    reply, trace = await call_agent(
        runtime, "reasoner", [user_message(text, [image])], task="probe", images=[image],
        conversation=f"panel {panel.ref}", step=0, schema=ProbeAnswer, extra={"concepts": [first, second]},
    )  # fmt: skip
    given = {1: "left", 2: "right"}.get(reply.parsed["concept"]) if reply.parsed else None
    note = {"kind": "panel", "side": panel.side, "ref": panel.ref, "given": given, "text": reply.text}
    return {"notes": [note | {"parse_error": reply.parse_error}], "trace": [trace]}


async def _score_probes(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    problem = problem_of(state)
    notes = sorted((n for n in state.get("notes", []) if n["kind"] == "panel"), key=lambda n: n["ref"])
    sides = {n["ref"]: n["given"] for n in notes}
    expected = {n["ref"]: n["side"] for n in notes}
    right = sum(sides[ref] == side for ref, side in expected.items())
    errors = [f"{n['ref']}: {n['parse_error']}" for n in notes if n["parse_error"]]
    answer = Answer(
        strategy="concept-probe",
        problem=problem.key,
        text="\n\n".join(f"[{n['ref']}]\n{n['text']}" for n in notes),
        sides=sides,
        expected={"sides": expected},
        correct=right == len(expected),
        parse_status="failed" if errors else "ok",
        parse_error="; ".join(errors) or None,
        details={"probe": _probe(state), "panels_right": right, "panel_accuracy": right / len(expected)},
    )
    return {"answer": answer.model_dump(mode="json", exclude={"trace"})}


@strategy(
    "concept-probe",
    family=FAMILY,
    paper=WONDERLAND,
    section="Sec. 3 Task 2, Listings 3-5",
    roles=("author", "reasoner"),
    calls="1 author call (text only) writing the probe from the true concepts, then 12 panel calls, "
    "each alone: the probe and one panel -> concept 1 or 2; solved when all 12 are right",
    prepare=_prepare_probe,
    options={"probes_from": "a run whose authored probes are asked instead of writing new ones"},
    reuses={"probes_from": ("probe", "author")},
)
def concept_probe() -> Graph:
    return fan_out_graph(_panel_sends, ("ask", _ask_panel), _score_probes, before=("author", _author_probe))


# --- Task 3: hypotheses --------------------------------------------------------------------------------


class Hypothesis(BaseModel):
    set_a_rule: str
    set_b_rule: str


class Hypotheses(BaseModel):
    hypotheses: list[Hypothesis]


def distinct_hypotheses(proposed: list[dict[str, str]], limit: int) -> list[list[str]]:
    """The first `limit` hypotheses, repeats (ignoring case and spacing) dropped."""
    seen: set[tuple[str, str]] = set()
    kept: list[list[str]] = []
    for pair in proposed:
        left, right = pair["set_a_rule"].strip(), pair["set_b_rule"].strip()
        key = (" ".join(left.lower().split()), " ".join(right.lower().split()))
        if key not in seen and len(kept) < limit:
            seen.add(key)
            kept.append([left, right])
    return kept


def _prepare_hypotheses(
    problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    count = str(options.get("count", HYPOTHESES))
    if not count.isdigit() or int(count) < 1:
        raise StrategyError(f"hypotheses takes count=N with N at least 1, not {count!r}")
    return {"count": int(count)}


async def _hypothesize(state: SolveState, config: RunnableConfig) -> dict[str, Any]:
    runtime, problem = runtime_of(config), problem_of(state)
    sheet, count = sheet_source(runtime, problem), state["inputs"]["count"]
    text = runtime.prompts.fill(FAMILY, "hypotheses", count=count, **_sheet_values(problem))
    reply, trace = await call_agent(
        runtime, "reasoner", [user_message(text, [sheet])], task="hypothesize", images=[sheet],
        conversation="brainstorm", step=0, schema=Hypotheses, extra={"count": count},
    )  # fmt: skip
    kept = distinct_hypotheses(reply.parsed["hypotheses"], count) if reply.parsed else []
    answer = Answer(
        strategy="hypotheses",
        problem=problem.key,
        text="\n".join(f"{n}. Left: {a}; Right: {b}" for n, (a, b) in enumerate(kept, 1)) or reply.text,
        parse_status=reply.parse_status,
        parse_error=reply.parse_error,
        details={"hypotheses": kept, "asked": count},
    )
    return {"trace": [trace], "answer": answer.model_dump(mode="json", exclude={"trace"})}


@strategy(
    "hypotheses",
    family=FAMILY,
    paper=WONDERLAND,
    section="Sec. 3 Task 3, Listing 6",
    roles=("reasoner",),
    calls="1 call: the sheet -> 20 distinct (Set A rule, Set B rule) hypotheses; judged one by one "
    "until one is accepted",
    prepare=_prepare_hypotheses,
    options={"count": "how many hypotheses to ask for (default 20)"},
)
def hypotheses() -> Graph:
    return linear_graph(("brainstorm", _hypothesize))
