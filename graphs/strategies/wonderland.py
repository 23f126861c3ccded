"""The Bongard-in-Wonderland tasks (Wüst et al., ICML 2025, Sec. 3, App. A.1).

open-ended (Task 1): the sheet -> a rule per set, judged; run with
`--attempts 3`, a problem is solved when most attempts are accepted.
multiple-choice (Task 1.1): the sheet and the rule pairs keyed by problem number -> a number.
concept-probe (Task 2): an author agent writes a probe from the true concept
pair; each panel is then asked alone which concept it shows. hypotheses
(Task 3): the sheet -> many candidate rule pairs, judged one by one.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict, cast

from pydantic import BaseModel, Field, field_validator, model_validator

from agents.call import AgentReply
from agents.prompt_library import prompt_family
from datasets_io.problem import BongardProblem, Side
from graphs.answer import AnswerParts
from graphs.nodes import (
    Conversation,
    Ctx,
    SolveState,
    ask,
    fan_out_graph,
    free_answer,
    linear_graph,
    needs_concept,
    panel_source,
    send_each,
    sheet_source,
)
from graphs.registry import (
    DatasetContext,
    Graph,
    Preparation,
    StrategyError,
    StrategyOptions,
    family_strategy,
    seeded_random,
)

WONDERLAND = "Wüst et al., ICML 2025 (Bongard in Wonderland)"
WONDERLAND_DECODING = {"max_tokens": 2048}
"""App. A, Table 2: each API's default sampling, replies of up to 2048 tokens."""
FAMILY = prompt_family("wonderland", "graphs")
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


def rules_answer(reply: AgentReply) -> AnswerParts:
    """The two set rules as `Left:` / `Right:` lines for the judges; free text when unparsed."""
    if reply.parsed is None:
        return free_answer(reply)
    left, right = reply.parsed["set_a_rule"], reply.parsed["set_b_rule"]
    return AnswerParts(
        text=f"Left: {left}\nRight: {right}",
        left_rule=left,
        right_rule=right,
        parse_status="ok",
        details={"analysis": reply.parsed.get("analysis", "")},
    )


async def _open_ended(state: SolveState, runtime: Ctx) -> SolveState:
    item = runtime.context
    text = item.prompts.fill(FAMILY, "open_ended", **_sheet_values(item.problem))
    reply = await ask(
        item, "reasoner", text, [sheet_source(item)], task="answer", conversation="solve", schema=SetRules
    )
    return {"answer": rules_answer(reply)}


wonderland_strategy = family_strategy(
    family=FAMILY,
    paper=WONDERLAND,
    decoding=WONDERLAND_DECODING,
)
"""The Bongard in Wonderland tasks: one paper and its decoding."""


@wonderland_strategy(
    "open-ended",
    section="Sec. 3 Task 1, Listing 1",
    roles=("reasoner",),
    calls="1 call: the sheet -> a Set A rule and a Set B rule (run with --attempts 3; judged)",
    count=lambda shape: 1,
    images="1 call: the sheet, one image of all 12 diagrams (Set A on the left, Set B on the right)",
    contexts="1 call in its own context",
    attempts="3 runs (Sec. 4); Table 1: rounded mean solved over the runs; "
    "later analyses: solved in >= 2 of 3; no seed (the authors' model wrappers take none)",
    scoring="free-form: 1 GPT-4o judge at temperature 0, 0/1 rubric with 5 worked examples "
    "(App. A.3, Listing 7)",
    judged=True,
    judge_style="rubric",
)
def open_ended() -> Graph:
    return linear_graph(SolveState, ("solve", _open_ended))


# --- Task 1.1: multiple choice -----------------------------------------------------------------------

SAME_ANSWER_GROUPS = (frozenset({6, 10, 96, 98}), frozenset({85, 86, 88, 89}))
"""Classic problems whose numbers the authors' scoring accepts for one another: 6, 10, 96 and 98
all read "Triangles / Quadrangles", 85, 86, 88 and 89 all "Three parts / Five parts"
(experiments/evaluate/eval_bp_with_solutions.py). 36 and 37 read alike too but are not grouped
there, so for them only the true number counts. A group counts only among identical pairs."""


class OptionChoice(BaseModel):
    analysis: str
    option: int


class MultipleChoiceOptions(StrategyOptions):
    choices: Literal["all"] | Annotated[int, Field(ge=2)] = Field(
        default="all",
        description="all: every problem's rule pair, by problem number (100 on the classic set); "
        "N: the true one and N-1 other problems' pairs drawn at random (seeded)",
    )

    @field_validator("choices", mode="before")
    @classmethod
    def _all_or_a_number(cls, value: object) -> object:
        if value == "all" or (not isinstance(value, bool) and str(value).isdigit() and int(str(value)) >= 2):
            return value
        raise ValueError("choices=all or a number of at least 2")


class ListedOption(TypedDict):
    id: int
    """The problem's number: its id (where a dataset's ids are not all numbers, its place in it)."""
    left: str
    right: str


class ChoiceInputs(TypedDict):
    options: list[ListedOption]
    """The candidate rule pairs in the order shown."""
    label: int
    """The true problem's number."""
    accepted: list[int]
    """The numbers scored correct: the true one, and the other problems of its
    `SAME_ANSWER_GROUPS` group that have the very same pair."""


def numbered_pairs(problem: BongardProblem, context: DatasetContext) -> tuple[list[ListedOption], int]:
    """Every problem's rule pair by number, none merged (the problem's own included), and its number.

    The number is the problem id where every id is a distinct whole number (the classic set:
    1-100), else the problem's place in the dataset order, from 1.
    """
    entries = list(context.concepts)
    if all(pid != problem.id for pid, _ in entries):
        entries.append((problem.id, needs_concept(problem)))
    ids = [pid for pid, _ in entries]
    numbers = (
        [int(pid) for pid in ids]
        if all(pid.isdigit() for pid in ids) and len({int(pid) for pid in ids}) == len(ids)
        else list(range(1, len(ids) + 1))
    )
    listed: list[ListedOption] = [
        {"id": number, "left": concept.left, "right": concept.stated_right}
        for number, (_, concept) in zip(numbers, entries, strict=True)
    ]
    return sorted(listed, key=lambda option: option["id"]), numbers[ids.index(problem.id)]


def _pair(option: ListedOption) -> tuple[str, str]:
    return option["left"], option["right"]


def _prepare_choice(given: Preparation[MultipleChoiceOptions]) -> ChoiceInputs:
    """As the authors' code does it: all pairs in number order; or the true one and N-1 other
    problems' pairs (a repeat of the true pair among them is possible), shown in the order of
    their numbers as text ("1" < "10" < "2"), the order of its sorted string keys."""
    problem, choices = given.problem, given.options.choices
    needs_concept(problem)
    every, label = numbered_pairs(problem, given.dataset)
    own = next(option for option in every if option["id"] == label)
    if choices == "all":
        listed = every
    else:
        others = [option for option in every if option["id"] != label]
        if len(others) < choices - 1:
            raise StrategyError(f"the dataset has {len(others)} other problems; {choices - 1} are needed")
        drawn = seeded_random(given.seed, problem, "multiple-choice").sample(others, choices - 1)
        listed = sorted([own, *drawn], key=lambda option: str(option["id"]))
    group = next((g for g in SAME_ANSWER_GROUPS if label in g), frozenset({label}))
    accepted = sorted(o["id"] for o in every if o["id"] in group and _pair(o) == _pair(own))
    return {"options": listed, "label": label, "accepted": accepted}


def options_text(listed: list[ListedOption]) -> str:
    """The options as the authors' prompt shows them: one JSON object, number -> [Set A rule, Set B rule]."""
    return json.dumps({str(o["id"]): [o["left"], o["right"]] for o in listed})


def choice_answer(reply: AgentReply, inputs: ChoiceInputs) -> AnswerParts:
    """The chosen number scored against the accepted ones; `same_pair` marks a wrong number whose
    pair reads exactly as the true one (BP 36 vs 37), for analyses that would count it."""
    listed, label = inputs["options"], inputs["label"]
    chosen: int | None = reply.parsed["option"] if reply.parsed else None
    pairs = {o["id"]: _pair(o) for o in listed}
    details: dict[str, Any] = {"options": len(listed), "accepted": inputs["accepted"]}
    if chosen is not None and chosen != label and chosen in pairs:
        details["same_pair"] = pairs[chosen] == pairs[label]
    return AnswerParts(
        text=reply.text,
        label=chosen,
        expected={"label": label},
        correct=chosen is not None and chosen in inputs["accepted"],
        parse_status=reply.parse_status,
        parse_error=reply.parse_error,
        details=details,
    )


async def _choose(state: SolveState, runtime: Ctx[ChoiceInputs]) -> SolveState:
    item = runtime.context
    inputs = item.inputs
    listed = inputs["options"]
    text = item.prompts.fill(
        FAMILY, "multiple_choice", options=options_text(listed), **_sheet_values(item.problem)
    )
    reply = await ask(
        item,
        "reasoner",
        text,
        [sheet_source(item)],
        task="select",
        conversation="choose",
        schema=OptionChoice,
        extra={"options": listed},
    )
    return {"answer": choice_answer(reply, inputs)}


@wonderland_strategy(
    "multiple-choice",
    section="Sec. 3 Task 1.1, Listing 2",
    roles=("reasoner",),
    calls="1 call: the sheet and rule pairs by problem number (all 100, or 10) -> a problem number",
    count=lambda shape: 1,
    images="1 call: the sheet (all 12 diagrams in one image) + the rule pairs as a JSON object "
    "keyed by problem number",
    contexts="1 call in its own context",
    attempts="3 runs (Sec. 4, Tables 5-6), a fresh draw of the 10 each; Table 1 reports the "
    "rounded mean of BPs solved over the runs; no seed (the authors' model wrappers take none)",
    scoring="exact: the chosen number must be the true problem's (or one of the same pair, "
    "as the authors' code groups them); all 100, or the true one and 9 at random (Sec. 4)",
    options=MultipleChoiceOptions,
    prepare=_prepare_choice,
)
def multiple_choice() -> Graph:
    return linear_graph(SolveState, ("choose", _choose))


# --- Task 2: concept probes --------------------------------------------------------------------------


class ProbeDraft(BaseModel):
    probe: str


class ProbeAnswer(BaseModel):
    reasoning: str
    concept: Literal[1, 2]


class ConceptProbeOptions(StrategyOptions):
    probes: str | None = Field(
        default=None,
        description="a checkout of the Bongard in Wonderland repository (or its prompts/concepts folder): "
        "ask its published probe per problem (concept_prompt_N.txt) and score each panel's answer "
        "field by exact match against contrary_concepts.json, as the paper does",
    )
    probes_from: str | None = Field(
        default=None, description="a run whose authored probes are asked instead of writing new ones"
    )

    @model_validator(mode="after")
    def _one_source(self) -> ConceptProbeOptions:
        if self.probes is not None and self.probes_from is not None:
            raise ValueError("give probes (the published ones) or probes_from (an earlier run's), not both")
        return self


class PublishedProbe(TypedDict):
    """A probe the authors published: its text, the answers it expects (left, right), the file."""

    text: str
    answers: list[str]
    source: str


class Probe(TypedDict):
    text: str
    author: str
    """The agent spec of the author."""
    from_run: NotRequired[str]
    """Set when the probe was written in an earlier run (`probes_from`)."""


class ProbeInputs(TypedDict):
    concepts: list[str]
    """The left and the right concept, in that order (concept 1 and concept 2 of the probe)."""
    probe: NotRequired[Probe]
    """A probe reused from an earlier run; none is authored then."""
    published: NotRequired[PublishedProbe]
    """The authors' probe for this problem (`-S probes=PATH`); none is authored then."""


PUBLISHED_PROBES = "prompts/concepts"
PUBLISHED_ANSWERS = "contrary_concepts.json"


def published_probe(folder: Path, problem: BongardProblem) -> PublishedProbe:
    """The authors' probe and expected answers for a classic problem, from a user's checkout."""
    if (folder / PUBLISHED_PROBES).is_dir():
        folder = folder / PUBLISHED_PROBES
    prompt, answers_file = folder / f"concept_prompt_{problem.id}.txt", folder / PUBLISHED_ANSWERS
    for needed in (prompt, answers_file):
        if not needed.is_file():
            raise StrategyError(f"-S probes: no {needed.name} for {problem.key} (looked for {needed})")
    try:
        answers = json.loads(answers_file.read_text(encoding="utf-8"))[problem.id]
    except (ValueError, KeyError) as error:
        raise StrategyError(f"{answers_file}: no answer pair for problem {problem.id} ({error})") from None
    if not (isinstance(answers, list) and len(answers) == 2 and all(isinstance(a, str) for a in answers)):
        raise StrategyError(f"{answers_file}: problem {problem.id} needs [left answer, right answer]")
    return {"text": prompt.read_text(encoding="utf-8"), "answers": answers, "source": str(prompt)}


def published_answer(reply: str) -> str | None:
    """The answer field the way the authors' scoring reads it (`eval_detect_concepts.py`): the text
    after the reply's first opening brace, up to the next brace of either kind (an opening one
    ends it too, as they split on each in turn), or to the end where none follows; then what
    follows its last colon, without quotes, stripped. None when the reply has no opening brace
    (their "error", which matches no concept)."""
    if "{" not in reply:
        return None
    inside = reply.split("{", 2)[1].split("}", 1)[0]
    return inside.split(":")[-1].replace("'", "").replace('"', "").strip()


_CONCEPT_SIDES: dict[int, Side] = {1: "left", 2: "right"}


class PanelVerdict(TypedDict):
    """Which concept the reasoner said one panel shows."""

    ref: str
    side: Side
    given: Side | None
    """The side of the concept given (concept 1 is the left one); None when unparsed."""
    text: str
    parse_error: str | None


class ProbeState(SolveState, total=False):
    probe: Probe
    panel: str
    """A probe branch's panel ref."""
    panel_verdicts: Annotated[list[PanelVerdict], operator.add]


def _prepare_probe(given: Preparation[ConceptProbeOptions]) -> ProbeInputs:
    problem = given.problem
    concept = needs_concept(problem)
    if concept.right is None:
        raise StrategyError(f"{problem.key} states no right-side concept to probe against")
    inputs: ProbeInputs = {"concepts": [concept.left, concept.right]}
    if given.options.probes is not None:
        inputs["published"] = published_probe(Path(given.options.probes).expanduser(), problem)
    reused = given.reused.get("probes_from")
    if reused is not None:
        # the stored probe's own fields win: a probe reused twice keeps the run that wrote it
        inputs["probe"] = cast(Probe, {"from_run": reused.run, "author": reused.agent, **reused.value})
    return inputs


async def _author_probe(state: ProbeState, runtime: Ctx[ProbeInputs]) -> ProbeState:
    """The probe of this problem: the published one, an earlier run's, or the author's, written once
    per problem and author and kept in the workspace for every later attempt, run and model."""
    item = runtime.context
    if "published" in item.inputs:
        published = item.inputs["published"]
        return {"probe": {"text": published["text"], "author": f"published: {published['source']}"}}
    if "probe" in item.inputs:
        return {"probe": item.inputs["probe"]}  # written in an earlier run
    first, second = item.inputs["concepts"]
    author = item.run.agent("author").spec

    async def write() -> dict[str, Any]:
        examples: dict[str, str] = {}
        for name, (a, b) in WORKED_PROBES.items():
            examples |= {f"{name}_first": a, f"{name}_second": b}
            examples[f"{name}_probe"] = item.prompts.fill(FAMILY, f"probe_example_{name}")
        text = item.prompts.fill(FAMILY, "probe_author", first=first, second=second, **examples)
        reply = await ask(
            item,
            "author",
            text,
            task="generate",
            conversation="author",
            schema=ProbeDraft,
            extra={"concepts": [first, second]},
        )
        return {"text": reply.parsed["probe"] if reply.parsed else reply.text, "author": author}

    if item.run.kept is None:
        return {"probe": cast(Probe, await write())}
    key = (item.problem.key, author, first, second)
    probe, _ = await item.run.kept.get_or_make("probes", key, write)
    return {"probe": cast(Probe, probe)}


async def _ask_panel(state: ProbeState, runtime: Ctx[ProbeInputs]) -> ProbeState:
    """One panel, alone, with the probe: which of the two concepts does it show? A published probe
    is sent as written and its answer field read as the authors' scoring reads it."""
    item = runtime.context
    panel = item.panel(state["panel"])
    first, second = item.inputs["concepts"]
    system = item.prompts.fill(FAMILY, "probe_system")
    chat = Conversation(item, "reasoner", f"panel {panel.ref}", system=system)
    published = item.inputs.get("published")
    if published is not None:
        reply = await chat.ask(state["probe"]["text"], [panel_source(item, panel)], task="probe")
        field = published_answer(reply.text)
        sides: dict[str, Side] = dict(zip(published["answers"], ("left", "right"), strict=True))
        given: Side | None = sides.get(field) if field is not None else None
        error = None if field is not None else "no answer field ({...}) in the reply"
    else:
        probe = state["probe"]["text"]
        text = item.prompts.fill(FAMILY, "probe_answer", probe=probe, first=first, second=second)
        concepts = {"concepts": [first, second]}
        image = [panel_source(item, panel)]
        reply = await chat.ask(text, image, task="probe", schema=ProbeAnswer, extra=concepts)
        given = _CONCEPT_SIDES.get(reply.parsed["concept"]) if reply.parsed else None
        error = reply.parse_error
    verdict: PanelVerdict = {
        "ref": panel.ref,
        "side": panel.side,
        "given": given,
        "text": reply.text,
        "parse_error": error,
    }
    return {"panel_verdicts": [verdict]}


async def _score_probes(state: ProbeState, runtime: Ctx) -> ProbeState:
    return {"answer": probe_answer(state.get("panel_verdicts", []), state["probe"])}


def probe_answer(panel_verdicts: Sequence[PanelVerdict], probe: Probe) -> AnswerParts:
    """The concept-probe's scoring: solved when every panel got its own side's concept (a study's
    participants are scored by it too)."""
    verdicts = sorted(panel_verdicts, key=lambda v: v["ref"])
    sides = {v["ref"]: v["given"] for v in verdicts}
    expected = {v["ref"]: v["side"] for v in verdicts}
    right = sum(sides[ref] == side for ref, side in expected.items())
    errors = [f"{v['ref']}: {v['parse_error']}" for v in verdicts if v["parse_error"]]
    return AnswerParts(
        text="\n\n".join(f"[{v['ref']}]\n{v['text']}" for v in verdicts),
        sides=sides,
        expected={"sides": expected},
        correct=right == len(expected),
        parse_status="failed" if errors else "ok",
        parse_error="; ".join(errors) or None,
        details={"probe": probe, "panels_right": right, "panel_accuracy": right / len(expected)},
    )


@wonderland_strategy(
    "concept-probe",
    section="Sec. 3 Task 2, Listings 3-5",
    roles=("author", "reasoner"),
    calls="1 author call (text only) per problem writing the probe from the true concepts, kept for every "
    "later attempt, run and model (none with -S probes=PATH, the published probes), then 12 panel calls, "
    "each alone: the probe and one panel -> its concept; solved when all 12 are right",
    count=lambda shape: (0 if shape.options.probes else 1) + shape.context,
    images="author call: none (text only); then 1 panel per call, one call per panel (12 on a classic "
    "problem)",
    contexts="none shared: the author call afresh; each panel call afresh after a system turn",
    attempts="3 runs, o1 once (Sec. 4, fn. 3); Table 9: every panel right in all runs, and in >= 2 "
    "of 3 (`bongard analyze probes`); no seed (the authors' model wrappers take none)",
    scoring="exact, per panel: with -S probes=PATH the reply's answer field matched exactly against its "
    "side's concept in contrary_concepts.json (the authors' scoring); without it the authored probe's "
    "structured reply names concept 1 (left) or 2 (right), matched with the panel's side; a BP counts "
    "when all its panels are right (Sec. 4 Q3)",
    options=ConceptProbeOptions,
    prepare=_prepare_probe,
    reuses={"probes_from": ("probe", "author")},
)
def concept_probe() -> Graph:
    return fan_out_graph(
        ProbeState,
        send_each("ask", "panel", lambda item: [panel.ref for panel in item.problem.context_panels]),
        ("ask", _ask_panel),
        _score_probes,
        before=("author", _author_probe),
    )


# --- Task 3: hypotheses --------------------------------------------------------------------------------


class Hypothesis(BaseModel):
    set_a_rule: str
    set_b_rule: str


class Hypotheses(BaseModel):
    hypotheses: list[Hypothesis]


class HypothesesOptions(StrategyOptions):
    count: int = Field(
        default=HYPOTHESES,
        ge=1,
        description="how many hypotheses to ask for",
        json_schema_extra={"departure": "asks for a number of hypotheses other than the 20 of Listing 6"},
    )


class HypothesesInputs(TypedDict):
    count: int


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


def _prepare_hypotheses(given: Preparation[HypothesesOptions]) -> HypothesesInputs:
    return {"count": given.options.count}


async def _hypothesize(state: SolveState, runtime: Ctx[HypothesesInputs]) -> SolveState:
    item = runtime.context
    count: int = item.inputs["count"]
    text = item.prompts.fill(FAMILY, "hypotheses", count=count, **_sheet_values(item.problem))
    reply = await ask(
        item,
        "reasoner",
        text,
        [sheet_source(item)],
        task="hypothesize",
        conversation="brainstorm",
        schema=Hypotheses,
        extra={"count": count},
    )
    kept = distinct_hypotheses(reply.parsed["hypotheses"], count) if reply.parsed else []
    answer = AnswerParts(
        text="\n".join(f"{n}. Left: {a}; Right: {b}" for n, (a, b) in enumerate(kept, 1)) or reply.text,
        parse_status=reply.parse_status,
        parse_error=reply.parse_error,
        details={"hypotheses": kept, "asked": count},
    )
    return {"answer": answer}


@wonderland_strategy(
    "hypotheses",
    section="Sec. 3 Task 3, Listing 6",
    roles=("reasoner",),
    calls="1 call: the sheet -> 20 distinct (Set A rule, Set B rule) hypotheses; judged one by one "
    "until one is accepted",
    count=lambda shape: 1,
    images="1 call: the sheet (all 12 diagrams in one image)",
    contexts="1 call in its own context",
    attempts="1 run per problem: each model asked once for 20 hypotheses (App. B.6, Table 16)",
    scoring="free-form: the Task 1 judge; solved when one hypothesis gets both rules right (Sec. 3 Task 3)",
    options=HypothesesOptions,
    prepare=_prepare_hypotheses,
    judged=True,
    judge_style="rubric",
)
def hypotheses() -> Graph:
    return linear_graph(SolveState, ("brainstorm", _hypothesize))
