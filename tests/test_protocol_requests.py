"""Every strategy's requests on the wire match its paper's protocol, checked on one real problem.

`bongard run` talks to a stand-in OpenAI-protocol server that gives the least valid reply
(`tests.standins.schema_replies`): the first enum value everywhere, so both test images of a
two-image call land on the same side, the case a same-side re-ask would answer. Per strategy the
recorded requests fix the call count (no re-ask by default, no judge without `--judges`), each
call's images and prior turns, the sheet's size and layout, and the decoding sent.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema
import pytest
from PIL import Image

from datasets_io.catalog import open_dataset
from datasets_io.problem import SIDES, BongardProblem
from datasets_io.render import BORDER_GREY, COLUMNS_PER_SIDE, SEPARATOR_BLACK, SheetLayout
from graphs.registry import get_strategy, strategy_names
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.sent_requests import sent_images
from tests.standins.protocols import OpenAIChat
from tests.standins.schema_replies import minimal_reply, output_schema
from tests.standins.server import StandInServer


class Call(NamedTuple):
    """One request as sent: the images it carries (earlier turns' included), its messages (system,
    user and assistant turns: 1 for a call in a context of its own), and how many of its images
    are the problem sheet rather than panel files."""

    images: int
    messages: int
    sheets: int = 0


class Sheet(NamedTuple):
    """A sheet as decoded from a request: its size, the panels framed in each side's block, and
    whether the black separator splits it down the middle."""

    size: tuple[int, int]
    panels: tuple[int, int]
    separated: bool


SHEET_ROWS = 3
SIX_A_SIDE = Sheet(size=(1024, 763), panels=(6, 6), separated=True)
"""Case study Sec. 4: each side's 3 rows x 2 columns, the sheet 1024 x 763. Panels are letterboxed
into square cells (datasets_io/render.py, `SheetLayout`), so the photographs of Bongard-RWR, of any
aspect ratio, give the same 1024 x 763 sheet as the square classic drawings."""
FIVE_A_SIDE = SIX_A_SIDE._replace(panels=(5, 5))
"""Classic with panels 5 and 11 held out as the test pair: the same 3 x 2 blocks, one cell empty."""


def alone(count: int, images: int, sheets: int = 0) -> list[Call]:
    """`count` calls, each one user turn in a context of its own."""
    return [Call(images, 1, sheets)] * count


def conversation(per_turn: int, turns: int) -> list[Call]:
    """One context: a system turn, `turns` user turns of `per_turn` images, each sent after the
    replies to the earlier ones, then a closing turn with no image of its own."""
    shown = [Call(per_turn * turn, 2 * turn) for turn in range(1, turns + 1)]
    return [*shown, Call(per_turn * turns, 2 * turns + 2)]


CLASSIC = "bongard-classic"
RWR = "bongard-rwr"


@dataclass(frozen=True)
class Protocol:
    """One problem's requests for a strategy; `sheet` is None where no sheet is sent."""

    dataset: str
    calls: list[Call]
    sheet: Sheet | None = None
    loader_options: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    """Roles named on the command line besides `--model` (all the same stand-in model)."""

    @property
    def problem(self) -> str:
        """Classic BP 1 (6 panels a side); Bongard-RWR 31, its photographs, with a test image a side."""
        return "1" if self.dataset == CLASSIC else "31"

    def run_args(self) -> tuple[str, ...]:
        loader = [arg for option in self.loader_options for arg in ("-O", option)]
        return ("--dataset", self.dataset, "--problems", self.problem, *loader)


THE_SHEET = alone(1, 1, sheets=1)
"""One call with the sheet alone."""
CONTEXT = 12
"""Context panels of both problems: 6 a side."""
WITH_TESTS = CONTEXT + 2
"""Bongard-RWR 31's panels with its test image of each side."""

PROTOCOLS: dict[str, Protocol] = {
    # Małkiński et al., ICML 2025 (case study), Sec. 3.1, Fig. 2a-e.
    "direct": Protocol(CLASSIC, THE_SHEET, SIX_A_SIDE),
    "descriptive": Protocol(CLASSIC, alone(CONTEXT, 1) + alone(1, 0)),
    "descriptive-direct": Protocol(CLASSIC, alone(CONTEXT, 1) + THE_SHEET, SIX_A_SIDE),
    "descriptive-iterative": Protocol(CLASSIC, 2 * conversation(1, 6) + alone(1, 0)),
    "contrastive": Protocol(CLASSIC, alone(6, 2) + alone(1, 0)),
    "contrastive-direct": Protocol(CLASSIC, alone(6, 2) + THE_SHEET, SIX_A_SIDE),
    "contrastive-iterative": Protocol(CLASSIC, conversation(2, 6)),
    # Case study Sec. 3.3, Fig. 3b-c: the binary settings; images-to-sides on the held-out pair.
    "ground-truth": Protocol(CLASSIC, THE_SHEET, SIX_A_SIDE),
    "incorrect-label": Protocol(CLASSIC, THE_SHEET, SIX_A_SIDE),
    "images-to-sides": Protocol(CLASSIC, alone(1, 3, sheets=1), FIVE_A_SIDE, ("holdout_test=true",)),
    # Vaishnav & Tammet, Sec. 5.1-5.3, on Bongard-OpenWorld's shape (6 + 6 context images, 2 queries),
    # which Bongard-RWR 31 has; the minimal rule summary is short: no over-20-words re-ask.
    "direct-rule-learning": Protocol(RWR, alone(2, CONTEXT + 1)),
    "deductive-rule-learning": Protocol(RWR, alone(1, CONTEXT) + alone(2, 1)),
    "componential-analysis": Protocol(RWR, alone(WITH_TESTS, 1) + alone(2, 0)),
    # Vaishnav & Tammet 2026, the C-G paradigm: with no action programs (Bongard-RWR), structured
    # descriptions stand for the images, as in componential analysis (programs: test_strategies_symbolic).
    "symbolic-rule-learning": Protocol(RWR, alone(WITH_TESTS, 1) + alone(2, 0)),
    # Rules that run (VLP's grounding, then a search or a model's proposals in one conversation): the
    # least valid proposal is an empty program, unreadable, so every one of the 3 default turns is asked.
    "program-search": Protocol(RWR, alone(WITH_TESTS, 1)),
    "program-synthesis": Protocol(RWR, [*alone(WITH_TESTS, 1), Call(0, 1), Call(0, 3), Call(0, 5)]),
    # Pawlonka et al., ICLR 2026 (Bongard-RWR+), Sec. 3.2: I1S, CS, D1S, D2S, and CG from the sheet.
    "image-to-side": Protocol(RWR, alone(2, 2, sheets=1), SIX_A_SIDE),
    "concept-selection": Protocol(RWR, THE_SHEET, SIX_A_SIDE),
    "description-to-side": Protocol(RWR, alone(WITH_TESTS, 1) + alone(2, 0)),
    "descriptions-to-sides": Protocol(RWR, alone(WITH_TESTS, 1) + alone(1, 0)),
    "concept-generation": Protocol(RWR, THE_SHEET, SIX_A_SIDE),
    # Wüst et al., ICML 2025 (Bongard in Wonderland), Sec. 3 Tasks 1, 1.1, 2 and 3.
    "open-ended": Protocol(CLASSIC, THE_SHEET, SIX_A_SIDE),
    "multiple-choice": Protocol(CLASSIC, THE_SHEET, SIX_A_SIDE),
    # Task 2: one author call (kept for every later run and model), then each panel alone after the
    # system turn of the authors' code.
    "concept-probe": Protocol(CLASSIC, alone(1, 0) + [Call(1, 2)] * CONTEXT, roles=("author",)),
    "hypotheses": Protocol(CLASSIC, THE_SHEET, SIX_A_SIDE),
}


CALLING = [name for name in strategy_names() if get_strategy(name).roles]
"""Every strategy that makes calls (a mixture reads its members' stored answers: test_strategies_mixture)."""


def test_every_registered_strategy_has_its_protocol() -> None:
    """A strategy added without a row here fails, and so does a row left for a removed one."""
    assert sorted(PROTOCOLS) == sorted(CALLING)


def test_the_table_agrees_with_itself() -> None:
    """Calls count sheets exactly where a sheet is expected."""
    for name, protocol in PROTOCOLS.items():
        assert any(call.sheets for call in protocol.calls) == (protocol.sheet is not None), name


def decoded_sheet(data: bytes) -> Sheet:
    """A sheet's size and layout: the panels framed at the cells of each 3 x 2 block, the separator."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    layout = SheetLayout.fitting(image.width, SHEET_ROWS)
    origins = {
        side: [layout.cell_origin(side, cell) for cell in range(SHEET_ROWS * COLUMNS_PER_SIDE)]
        for side in SIDES
    }
    left, right = (
        sum(image.getpixel((x - 1, y + layout.cell // 2)) == (BORDER_GREY,) * 3 for x, y in origins[side])
        for side in SIDES
    )
    middle = image.getpixel((image.width // 2, image.height // 2)) == (SEPARATOR_BLACK,) * 3
    return Sheet(image.size, (left, right), middle)


def seen(body: Mapping[str, Any], panel_files: set[bytes]) -> Call:
    """A request as a `Call`: panels go as their files' bytes, so any other image is the sheet."""
    images = sent_images(body)
    return Call(len(images), len(body["messages"]), sum(image not in panel_files for image in images))


def decoding_sent(body: Mapping[str, Any]) -> tuple[Any, Any]:
    """Temperature and max tokens, as an OpenAI-compatible server reads them: `max_tokens` (a
    server that knows only that name ignores `max_completion_tokens`), never both."""
    assert "max_completion_tokens" not in body
    return body.get("temperature"), body.get("max_tokens")


@pytest.mark.parametrize("name", CALLING)
def test_each_strategy_sends_its_papers_requests(
    name: str, shared_data: Path, tmp_path: Path, classic: list[BongardProblem], rwr: list[BongardProblem]
) -> None:
    assert name in PROTOCOLS, f"{name} has no expected protocol in this table"
    protocol = PROTOCOLS[name]
    with StandInServer(OpenAIChat(), responder=minimal_reply) as server:
        model = f"openai-compatible:m@{server.url}/v1"
        roles = [arg for role in protocol.roles for arg in (f"--{role}", model)]
        result = run_bongard(
            "run",
            "--strategy",
            name,
            "--model",
            model,
            *roles,
            *protocol.run_args(),
            "--attempts",
            "1",
            "--data-dir",
            shared_data,
            "--home",
            tmp_path,
        )
        assert result.returncode == 0, result.stderr
        bodies = [request.body for request in server.model_requests()]
    store = ResultsStore(tmp_path / STORE_FILE)
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.done, summary.failed, summary.calls) == (1, 0, len(protocol.calls))

    problem = next(p for p in {CLASSIC: classic, RWR: rwr}[protocol.dataset] if p.id == protocol.problem)
    panel_files = {panel.path.read_bytes() for panel in problem.all_panels}
    calls = [seen(body, panel_files) for body in bodies]
    assert sorted(calls) == sorted(protocol.calls)  # concurrent calls arrive in any order
    for body in bodies:  # every structured reply was valid, so none could call for a re-ask
        if (schema := output_schema(body)) is not None:
            jsonschema.validate(json.loads(minimal_reply(body)), schema)

    sheets = {
        decoded_sheet(image) for body in bodies for image in sent_images(body) if image not in panel_files
    }
    assert sheets == ({protocol.sheet} if protocol.sheet else set())

    info = get_strategy(name)  # the paper whose protocol runs on this dataset; empty: each API's defaults
    declared = info.decoding_for(info.parse_options({}), protocol.dataset)
    assert {decoding_sent(body) for body in bodies} == {
        (declared.get("temperature"), declared.get("max_tokens"))
    }


def new_images(body: Mapping[str, Any]) -> int:
    """The images a request adds: those of its last message (earlier turns' came with earlier calls)."""
    last = body["messages"][-1]["content"]
    return sum(block.get("type") == "image_url" for block in last) if isinstance(last, list) else 0


NUMBER = re.compile(r"\d+")


@pytest.mark.parametrize("held_out", [False, True], ids=["all panels", "panels 5 and 11 held out"])
@pytest.mark.parametrize("name", CALLING)
def test_each_card_agrees_with_the_wire(
    name: str,
    held_out: bool,
    shared_data: Path,
    tmp_path: Path,
    classic: list[BongardProblem],
    rwr: list[BongardProblem],
) -> None:
    """The card's calls (its count), images per call (every number of images a call adds is stated
    on the card), decoding (as named on the wire) and scoring mode, against the recorded requests: on
    the protocol's problem, and on classic problem 1 with panels 5 and 11 held out (10 context
    panels, 2 test panels)."""
    protocol = PROTOCOLS[name]
    info = get_strategy(name)
    dataset, problem_id, options = (
        (CLASSIC, "1", ("-O", "holdout_test=true"))
        if held_out
        else (
            protocol.dataset,
            protocol.problem,
            tuple(a for o in protocol.loader_options for a in ("-O", o)),
        )
    )
    with StandInServer(OpenAIChat(), responder=minimal_reply) as server:
        model = f"openai-compatible:m@{server.url}/v1"
        roles = [arg for role in protocol.roles for arg in (f"--{role}", model)]
        result = run_bongard(
            "run",
            "--strategy",
            name,
            "--model",
            model,
            *roles,
            "--dataset",
            dataset,
            "--problems",
            problem_id,
            *options,
            "--attempts",
            "1",
            "--data-dir",
            shared_data,
            "--home",
            tmp_path,
        )
        assert result.returncode == 0, result.stderr
        bodies = [request.body for request in server.model_requests()]
    problems = {CLASSIC: classic, RWR: rwr}[dataset]
    problem = next(p for p in problems if p.id == problem_id)
    if held_out:
        problem = open_dataset(CLASSIC, shared_data, {"holdout_test": "true"}).problem("1")
    assert len(bodies) == info.calls_for(problem)

    assert info.card is not None
    stated = {int(number) for number in NUMBER.findall(info.card.images)}
    added = {new_images(body) for body in bodies} - {0}
    assert added <= stated, f"{name}: calls add {sorted(added)} images; the card states {sorted(stated)}"

    decoding = info.decoding_for(info.parse_options({}), dataset)
    declared = {key: decoding[key] for key in ("temperature", "max_tokens") if key in decoding}
    for body in bodies:
        sent = {key: body[key] for key in ("temperature", "max_tokens") if key in body}
        assert sent == declared and "max_completion_tokens" not in body

    assert info.card.scoring.startswith("free-form") == info.judged
    store = ResultsStore(tmp_path / STORE_FILE)
    [(_, _, answer)] = store.answer_records(store.resolve_run("latest"))
    assert (answer.correct is None) == info.judged  # judged answers wait for judges; others score themselves
