"""symbolic-rule-learning (Vaishnav & Tammet 2026, the C-G paradigm) on the wire: a Bongard-LOGO problem
built here with made-up action programs, run through a stand-in OpenAI-protocol server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datasets_io.catalog import open_dataset
from graphs.answer import Answer
from graphs.registry import get_strategy
from results.intervals import wilson
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard, run_on_classic
from tests.logo_releases import FOUR_STROKES, make_task, programs_for, write_json
from tests.standins.protocols import OpenAIChat
from tests.standins.schema_replies import minimal_reply
from tests.standins.server import StandInServer

FORMAT = "bongard-logo"
TASK = "ff_nact4_0007"
CHANGED = "arc_normal_0.500_0.625-0.500"
"""The first stroke of every negative (`programs_for`), so each side's programs are told apart."""


@pytest.fixture
def logo(root: Path) -> Path:
    make_task(root, TASK)
    write_json(root / "ff" / "ff_action_programs.json", {TASK: programs_for([FOUR_STROKES])})
    return root


def requests_of(logo: Path, home: Path, *options: str) -> tuple[Any, list[dict[str, Any]]]:
    """The run's exit and the request bodies the stand-in received."""
    with StandInServer(OpenAIChat(), responder=minimal_reply) as server:
        model = f"openai-compatible:m@{server.url}/v1"
        ran = run_bongard(
            "run",
            "--strategy",
            "symbolic-rule-learning",
            "--model",
            model,
            "--dataset",
            f"{FORMAT}:{logo}",
            *options,
            "--home",
            home,
        )
        return ran, [request.body for request in server.model_requests()]


def prompt_text(body: dict[str, Any]) -> str:
    [message] = body["messages"]
    content = message["content"]
    assert isinstance(content, str) or all(block["type"] == "text" for block in content)  # no image part
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


def test_action_programs_are_sent_instead_of_images_one_text_call_per_query(
    logo: Path, tmp_path: Path
) -> None:
    ran, bodies = requests_of(logo, tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert len(bodies) == 2  # the two queries (image 6 of each side); no describer call
    for body in bodies:
        text = prompt_text(body)
        assert body["temperature"] == 0
        positives = text.split("POSITIVE examples:\n", 1)[1].split("\n\nNEGATIVE", 1)[0].splitlines()
        negatives = text.split("NEGATIVE examples:\n", 1)[1].split("\n\nQUERY", 1)[0].splitlines()
        assert positives == [f"{n}. {json.dumps([FOUR_STROKES])}" for n in range(1, 7)]
        assert len(negatives) == 6 and all(CHANGED in line for line in negatives)
        assert "QUERY image:\n[[" in text  # the query's program, as the authors' action strings
    store = ResultsStore(tmp_path / STORE_FILE)
    [(_, _, answer)] = store.answer_records(store.resolve_run("latest"))
    assert answer.details["symbols"] == "programs"
    assert answer.details["describer"] == "the dataset's action programs"
    assert set(answer.details["descriptions"]["panels"]) == {
        *(f"{side}-{n}" for side in ("left", "right") for n in range(6)),
        "left-test-6",
        "right-test-6",
    }
    assert (
        get_strategy("symbolic-rule-learning").calls_for(open_dataset(FORMAT, logo.parent).problem(TASK)) == 2
    )


def test_strokes_give_the_programs_in_words(logo: Path, tmp_path: Path) -> None:
    ran, bodies = requests_of(logo, tmp_path, "-S", "symbols=strokes")
    assert ran.returncode == 0, ran.stderr
    text = prompt_text(bodies[0])
    assert "1. shape 1: plain line of length 0.50, then turn left 90°, zigzag line of length 0.70" in text
    assert "line_normal" not in text


def test_the_card_names_the_paper_and_what_it_could_not_state() -> None:
    info = get_strategy("symbolic-rule-learning")
    assert "arXiv 2604.21346" in info.paper and info.section.startswith("abstract, Sec. 1 (the C-G paradigm")
    assert info.card is not None and info.card.attempts.startswith("not stated in what could be read")


def test_programs_where_a_problem_has_none_are_refused_in_one_line(shared_data: Path, tmp_path: Path) -> None:
    ran = run_on_classic(
        "1",
        shared_data,
        tmp_path,
        "--strategy",
        "symbolic-rule-learning",
        "--model",
        "openai-compatible:m@http://127.0.0.1:9/v1",  # refused before any call: no server is asked
        "-S",
        "symbols=programs",
    )
    assert ran.returncode != 0
    assert "1 has no action programs" in ran.stderr and "-S symbols=descriptions" in ran.stderr


def test_without_programs_the_perception_agents_descriptions_stand_for_the_images(
    shared_data: Path, tmp_path: Path
) -> None:
    """Classic problem 1 has no programs: auto takes a describer's structured descriptions (the
    perception agent's, offline), and the reasoner gets them as text."""
    with StandInServer(OpenAIChat(), responder=minimal_reply) as server:
        model = f"openai-compatible:m@{server.url}/v1"
        flags = ("--strategy", "symbolic-rule-learning", "--model", model, "--describer", "perception")
        ran = run_on_classic("1", shared_data, tmp_path, *flags)
        bodies = [request.body for request in server.model_requests()]
    assert ran.returncode == 0, ran.stderr
    assert len(bodies) == 2 and all(
        '"scene": "a white panel with black line drawings' in prompt_text(b) for b in bodies
    )
    store = ResultsStore(tmp_path / STORE_FILE)
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.done, summary.failed, summary.calls) == (1, 0, 10 + 2 * 2)
    [(_, _, answer)] = store.answer_records(store.resolve_run("latest"))
    assert answer.details["symbols"] == "descriptions" and answer.details["describer"] == "perception"


def test_compare_puts_one_model_from_pixels_beside_it_from_symbols(shared_data: Path, tmp_path: Path) -> None:
    """Constructed runs of one model on classic problems 1-10: 1 solved from pixels, 10 from symbols."""
    store = ResultsStore(tmp_path / STORE_FILE)
    runs = []
    for strategy, solved in (("direct-rule-learning", 1), ("symbolic-rule-learning", 10)):
        config = {
            "strategy": strategy,
            "dataset": "bongard-classic",
            "data_dir": str(shared_data),
            "agents": {"reasoner": "m"},
            "attempts": 1,
        }
        run_id = store.create_run(config, "test")
        for number in range(1, 11):
            answer = Answer(
                strategy=strategy,
                problem=f"bongard-classic/{number}",
                text="",
                expected={"sides": {}},
                correct=number <= solved,
            )
            store.save_item(run_id, f"bongard-classic/{number}", 0, answer, None)
        store.release_run(run_id, finished=True)
        runs.append(run_id)
    compared = run_bongard("compare", *runs, "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr
    said = " ".join(compared.stdout.split())
    (p_low, p_high), (s_low, s_high) = (wilson(k, 10) for k in (1, 10))
    assert "pixels vs symbols (the same query task, the same model and problems):" in said
    assert (
        f"m on bongard-classic: pixels (direct-rule-learning) 0.100 [{p_low:.3f}, {p_high:.3f}] (n 10), "
        f"symbols (symbolic-rule-learning) 1.000 [{s_low:.3f}, {s_high:.3f}] (n 10); gain +0.900, "
        "the intervals do not overlap"
    ) in said


@pytest.mark.parametrize("strategy", ["symbolic-rule-learning", "componential-analysis"])
def test_the_perception_agent_reasons_over_its_own_descriptions(
    strategy: str, shared_data: Path, tmp_path: Path
) -> None:
    """With `--model perception` every reasoning call failed (0/40 scored after 560 describe calls): its
    calls show no image. The describer's notes now carry each panel's measurements (a query's without
    its side), and the text-only reasoner decides the queries from them: classic 1-6 all scored."""
    ran = run_on_classic("1-6", shared_data, tmp_path, "--strategy", strategy, "--model", "perception")
    assert ran.returncode == 0, ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    summary = store.summary(run_id)
    assert (summary.done, summary.failed, summary.calls) == (6, 0, 6 * (10 + 2 * 2))
    assert summary.solved >= 4  # 8 of classic 1-10 on this machine; chance is 1.5 of 6
    for _, _, answer in store.answer_records(run_id):
        notes = answer.details["descriptions"]["notes"]
        for query in ("left-test-5", "right-test-5"):
            [measured] = [json.loads(line.split(":", 1)[1]) for line in notes[query].splitlines()]
            assert measured[query]["side"] is None  # the reasoner is never told a query's side


@pytest.mark.parametrize("strategy", ["symbolic-rule-learning", "componential-analysis"])
def test_the_perception_agent_reasoning_over_a_models_descriptions_is_refused_before_the_run(
    strategy: str, shared_data: Path, tmp_path: Path
) -> None:
    """A language model's descriptions carry no measurements: each reasoning call would fail after the
    describe calls were paid for, so the run is refused before it is stored, with what to do."""
    ran = run_bongard(
        "run", "--strategy", strategy, "--describer", "openai-compatible:m@http://127.0.0.1:9/v1",
        "--reasoner", "perception", "--dataset", "bongard-classic", "--problems", "1-2",
        "-O", "holdout_test=true", "--data-dir", shared_data, "--home", tmp_path,
    )  # fmt: skip
    assert ran.returncode == 2
    said = " ".join(ran.stderr.split())
    assert "every reasoner call is text only, and perception cannot answer one" in said
    assert "give --reasoner a language model" in said and "or perception as the --describer too" in said
    assert not (tmp_path / STORE_FILE).exists() or ResultsStore(tmp_path / STORE_FILE).run_ids() == []
