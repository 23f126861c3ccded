"""By default a run follows the papers: no re-ask of a same-side answer, none of an unparsed reply.

Each re-ask is a named option, off unless asked for, and what a run was asked is in its
stored configuration. Checked on recorded requests against a stand-in OpenAI-protocol server.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from results.store import STORE_FILE, ResultsStore, judging_id
from tests.cli import run_bongard
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer

BOTH_LEFT = {"explanation": "", "concept": "", "answer": "LEFT"}


def always_both_left(body: dict[str, Any]) -> str:
    return json.dumps({"first": BOTH_LEFT, "second": BOTH_LEFT})


@pytest.fixture
def left_left() -> Iterator[StandInServer]:
    with StandInServer(OpenAIChat(), responder=always_both_left) as running:
        yield running


def images_to_sides(
    server: StandInServer, home: Path, shared_data: Path, *extra: str
) -> tuple[ResultsStore, str]:
    """A `bongard run` of images-to-sides with the stand-in as the model: the store and what it printed."""
    result = run_bongard(
        "run",
        "--strategy",
        "images-to-sides",
        "--model",
        f"openai-compatible:m@{server.url}/v1",
        "--dataset",
        "bongard-classic",
        "-O",
        "holdout_test=true",
        "--data-dir",
        shared_data,
        "--home",
        home,
        "--concurrency",
        "8",
        *extra,
    )
    assert result.returncode == 0, result.stderr
    return ResultsStore(home / STORE_FILE), result.stdout


def test_a_model_that_puts_both_tests_left_solves_nothing_by_default(
    left_left: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    store, _ = images_to_sides(left_left, tmp_path / "default", shared_data)
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.done, summary.solved) == (100, 0)
    assert len(list(left_left.model_requests())) == 100  # one call per problem, never a re-ask


def test_the_same_side_re_ask_is_an_option_the_run_records(
    left_left: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    store, _ = images_to_sides(
        left_left, tmp_path, shared_data, "--problems", "1-5", "-S", "retry_same_side=true"
    )
    run_id = store.resolve_run("latest")
    options = store.run_config(run_id)["strategy_options"]
    assert options == {"retry_same_side": "true", "protocol": "case-study"}  # classic: the case study's
    assert len(list(left_left.model_requests())) == 10  # asked again once per problem


def test_an_unparsed_reply_is_a_format_error_sent_once_unless_re_asks_are_asked_for(
    shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(OpenAIChat(), responder=lambda body: "both on the left, I think") as server:
        store, printed = images_to_sides(server, tmp_path / "default", shared_data, "--problems", "1-3")
        summary = store.summary(store.resolve_run("latest"))
        assert (summary.done, summary.solved, summary.format_errors) == (3, 0, 3)
        assert "0 solved, 3 format errors" in printed
        assert len(list(server.model_requests())) == 3
        asked, _ = images_to_sides(
            server, tmp_path / "asked", shared_data, "--problems", "1-3", "-M", "reask_unparsed=true"
        )
        assert asked.run_config(asked.resolve_run("latest"))["agent_params"] == {"reask_unparsed": "true"}
        assert len(list(server.model_requests())) == 3 + 6


@pytest.mark.parametrize(
    ("strategy", "extra", "sent"),
    [
        ("image-to-side", (), {"temperature": 0.5}),  # Bongard-RWR+ Sec. 4
        ("direct-rule-learning", (), {"temperature": 0}),  # cognitive paradigms App. A.4.2
        ("open-ended", (), {"max_tokens": 2048}),  # Bongard in Wonderland App. A, Table 2
        ("direct", (), {}),  # the case study states none: each API's defaults
        ("images-to-sides", (), {"temperature": 0.5}),  # on Bongard-RWR: Bongard-RWR+'s I2S
        ("images-to-sides", ("-S", "protocol=case-study"), {}),  # the case study's, as named
        ("concept-selection", (), {"temperature": 0.5}),  # on Bongard-RWR: Bongard-RWR+'s CS
        ("image-to-side", ("-M", "temperature=0.2"), {"temperature": 0.2}),  # -M wins
    ],
)
def test_each_strategy_sends_the_decoding_its_paper_states(
    strategy: str, extra: tuple[str, ...], sent: dict[str, Any], shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(OpenAIChat(), responder=lambda body: "no verdict") as server:
        result = run_bongard(
            "run",
            "--strategy",
            strategy,
            "--model",
            f"openai-compatible:m@{server.url}/v1",
            "--dataset",
            "bongard-rwr",
            "--problems",
            "31",
            "--data-dir",
            shared_data,
            "--home",
            tmp_path,
            *extra,
        )
        assert result.returncode == 0, result.stderr
        bodies = [request.body for request in server.model_requests()]
    for body in bodies:  # the reply limit under the name every OpenAI-compatible server reads
        got = {"temperature": body.get("temperature"), "max_tokens": body.get("max_tokens")}
        assert got == {"temperature": sent.get("temperature"), "max_tokens": sent.get("max_tokens")}
    assert bodies
    store = ResultsStore(tmp_path / STORE_FILE)
    recorded = store.run_config(store.resolve_run("latest"))["agent_params"]
    assert {key: float(value) for key, value in recorded.items()} == sent


def test_a_concept_without_a_right_rule_reads_as_not_left_as_the_case_study_writes_it() -> None:
    import asyncio

    from agents.provider import AgentParams
    from datasets_io.problem import Concept
    from judges.embedding_judge import concept_text
    from judges.llm_judge import LLMJudge
    from tests.scripted import ScriptedAgent

    caption = "a dog asleep on a sofa"
    openworld = Concept(left=caption, right=None)  # Bongard-OpenWorld states the left concept only
    assert openworld.stated_right == f"NOT {caption}"
    assert concept_text(openworld) == f"Left: {caption}\nRight: NOT {caption}"
    scripted = ScriptedAgent("scripted:judge", lambda request: "EVALUATION: OK")
    asyncio.run(LLMJudge(scripted.managed(AgentParams()), "strict").judge(openworld, "Left: a dog"))
    [request] = scripted.requests
    assert f"NOT {caption}" in request.text() and "Right: -" not in request.text()


def perception_run(strategy: str, problems: str, shared_data: Path, home: Path) -> tuple[str, Path]:
    """A free-form run by the offline agent, to be judged by the offline embedding judge: `--home`."""
    pytest.importorskip("sentence_transformers")
    solved = run_bongard(
        "run",
        "--strategy",
        strategy,
        "--model",
        "perception",
        "--dataset",
        "bongard-classic",
        "--problems",
        problems,
        "--data-dir",
        shared_data,
        "--home",
        home,
    )
    assert solved.returncode == 0, solved.stderr
    return ("--home", home)


def test_a_stricter_judging_is_stored_beside_the_counted_one_until_it_is_named(
    shared_data: Path, tmp_path: Path
) -> None:
    """The first complete judging counts; a later one changes no count until `runs count` names it
    (the command its judging printed), and `--judging` counts by any one, once."""
    home = perception_run("direct", "1-4", shared_data, tmp_path)

    def compared(*chosen: str) -> int:
        out = tmp_path / f"report-{len(list(tmp_path.iterdir()))}"
        result = run_bongard("compare", "--out", out, *chosen, *home)
        assert result.returncode == 0, result.stderr
        [row] = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
        count: int = row["solved"]
        return count

    def judge(judge: str) -> str:
        judged = run_bongard("judge", "latest", "--judges", judge, *home)
        assert judged.returncode == 0, judged.stderr
        return " ".join(judged.stdout.split())

    lenient, strict = "strict|embedding:0.01@vote:1", "strict|embedding:0.99@vote:1"
    printed = judge("embedding:0.01")
    assert f"judging {lenient}: the one the run's counts use (the first complete judging)" in printed
    assert compared() == 4  # lenient: every answer accepted
    printed = judge("embedding:0.99")
    assert f"judging {strict}: stored beside the one the run's counts use, {judging_id(lenient)}" in printed
    assert compared() == 4  # stricter and later, but not chosen: the count stands
    assert compared("--judging", strict) == 0 and compared("--judging", judging_id(strict)) == 0  # once
    assert compared() == 4

    hint = re.search(r"`bongard (runs count [^`]+)`", printed)
    assert hint is not None
    counted = run_bongard(*shlex.split(hint[1]))
    assert counted.returncode == 0 and f"counts by judging {strict}" in counted.stdout
    assert compared() == 0  # named: now it counts
    shown = " ".join(run_bongard("runs", "show", "latest", *home).stdout.split())
    assert f"judging {lenient}: 4 of 4 accepted" in shown and f"--judging {judging_id(lenient)}" in shown
    assert (
        f"judging {strict}: 0 of 4 accepted" in shown and "(counts: named with `bongard runs count`)" in shown
    )
    misspelt = run_bongard("runs", "count", "latest", "strict|embedding:0.1@vote:1", *home)
    assert misspelt.returncode == 2
    assert f"has no judging 'strict|embedding:0.1@vote:1' (did you mean '{lenient}'?)" in misspelt.stderr


def test_image_accuracy_stands_beside_problem_accuracy(tmp_path: Path) -> None:
    """I1S, D1S and the paradigms are reported per test image in the papers; a problem is solved
    only when all its test images are right."""
    from datasets_io.records import Answer
    from results.report import comparison_table, problems_frame

    store = ResultsStore(tmp_path / STORE_FILE)
    config = {"strategy": "image-to-side", "dataset": "bongard-rwr", "agents": {"reasoner": "m"}}
    run_id = store.create_run(config, "test")
    truth = {"left-test-6": "left", "right-test-6": "right"}
    for number, given in (("1", {"left-test-6": "left", "right-test-6": "left"}), ("2", truth)):
        answer = Answer(
            strategy="image-to-side",
            problem=f"bongard-rwr/{number}",
            text="",
            sides=given,
            expected={"sides": truth},
            correct=given == truth,
        )
        store.save_item(run_id, answer.problem, 0, answer, None)
    [row] = comparison_table(problems_frame(store, [run_id])).to_dict("records")
    assert (row["solved"], row["accuracy"]) == (1, 0.5)
    assert (row["images"], row["images_right"], row["image_accuracy"]) == (4, 3, 0.75)


def test_a_run_is_judged_with_its_papers_judge_prompt_unless_told(shared_data: Path, tmp_path: Path) -> None:
    """Bongard in Wonderland judges with its rubric (App. A.3), the case study with its strict prompt."""
    home = perception_run("open-ended", "1", shared_data, tmp_path)
    assert (
        "judging rubric|embedding:0.7@vote:1"
        in run_bongard("judge", "latest", "--judges", "embedding", *home).stdout
    )
    told = run_bongard("judge", "latest", "--judges", "embedding", "--style", "strict", *home)
    assert "judging strict|embedding:0.7@vote:1" in told.stdout


def test_an_agent_config_file_sets_parameters_for_run_and_is_recorded(
    shared_data: Path, tmp_path: Path
) -> None:
    config = tmp_path / "agents.toml"
    config.write_text('["*"]\ntemperature = 0.3\n', encoding="utf-8")
    with StandInServer(OpenAIChat(), responder=lambda body: "Left: a\nRight: b") as server:
        result = run_bongard(
            "run",
            "--strategy",
            "direct",
            "--model",
            f"openai-compatible:m@{server.url}/v1",
            "--dataset",
            "bongard-classic",
            "--problems",
            "1",
            "--data-dir",
            shared_data,
            "--home",
            tmp_path,
            "--agent-config",
            config,
        )
        assert result.returncode == 0, result.stderr
        assert [request.body["temperature"] for request in server.model_requests()] == [0.3]
    store = ResultsStore(tmp_path / STORE_FILE)
    assert store.run_config(store.resolve_run("latest"))["agent_config"] == {"*": {"temperature": 0.3}}
    config.write_text('["*"]\ntemprature = 0.3\n', encoding="utf-8")
    refused = run_bongard(
        "run",
        "--strategy",
        "direct",
        "--model",
        "openai-compatible:m@http://127.0.0.1:9/v1",
        "--dataset",
        "bongard-classic",
        "--problems",
        "1",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
        "--agent-config",
        config,
    )
    assert refused.returncode == 2 and "did you mean 'temperature'" in refused.stderr
    assert len(store.run_ids()) == 1  # refused before a run was stored


TWO_CLASSES = "the two test pictures belong to different classes"
"""A phrase of the Bongard-RWR+ Images-to-Sides prompt (Prompts 9-10) that the case study's lacks."""
INTRO = "A vertical line splits it into a left side and a right side"
"""A phrase of the case study's Prompt 6, the introduction of its Sec. 3.1 strategies only."""


def recorded_run(
    strategy: str, dataset: str, problem: str, shared_data: Path, home: Path, *extra: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A one-problem run against a stand-in that gives the least valid reply: bodies and stored config."""
    from tests.standins.schema_replies import minimal_reply

    with StandInServer(OpenAIChat(), responder=minimal_reply) as server:
        result = run_bongard(
            "run",
            "--strategy",
            strategy,
            "--model",
            f"openai-compatible:m@{server.url}/v1",
            "--dataset",
            dataset,
            "--problems",
            problem,
            "--data-dir",
            shared_data,
            "--home",
            home,
            *extra,
        )
        assert result.returncode == 0, result.stderr
        bodies = [request.body for request in server.model_requests()]
    store = ResultsStore(home / STORE_FILE)
    return bodies, store.run_config(store.resolve_run("latest"))


def prompt_of(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return (
        " ".join(b["text"] for b in content if b.get("type") == "text")
        if isinstance(content, list)
        else content
    )


def test_images_to_sides_on_bongard_rwr_follows_bongard_rwr_plus(shared_data: Path, tmp_path: Path) -> None:
    """Its Prompts 9-10, its reply form (one concept, then each image's explanation and side) and its
    temperature; the run records the protocol it followed."""
    [body], config = recorded_run("images-to-sides", "bongard-rwr", "31", shared_data, tmp_path)
    text = prompt_of(body)
    assert TWO_CLASSES in text and INTRO not in text and body["temperature"] == 0.5
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["concept", "first", "second"]
    assert config["strategy_options"]["protocol"] == "rwr-plus"


def test_the_case_study_protocol_is_taken_on_any_data_when_named(shared_data: Path, tmp_path: Path) -> None:
    [body], config = recorded_run(
        "images-to-sides", "bongard-rwr", "31", shared_data, tmp_path, "-S", "protocol=case-study"
    )
    assert TWO_CLASSES not in prompt_of(body) and "temperature" not in body
    assert config["strategy_options"]["protocol"] == "case-study"


@pytest.mark.parametrize(
    ("strategy", "options"),
    [("ground-truth", ()), ("incorrect-label", ()), ("images-to-sides", ("-O", "holdout_test=true"))],
)
def test_the_binary_settings_carry_no_introduction(
    strategy: str, options: tuple[str, ...], shared_data: Path, tmp_path: Path
) -> None:
    """The case study places Prompt 6 before its Sec. 3.1 strategies only; Prompts 7 and 8 stand alone."""
    [body], _ = recorded_run(strategy, "bongard-classic", "1", shared_data, tmp_path, *options)
    assert INTRO not in prompt_of(body) and "temperature" not in body


def test_concept_selection_on_classic_data_keeps_each_apis_defaults(
    shared_data: Path, tmp_path: Path
) -> None:
    """The case study's concept selection (synthetic BPs, HOI, OpenWorld) states no temperature."""
    [body], config = recorded_run("concept-selection", "bongard-classic", "31", shared_data, tmp_path)
    assert "temperature" not in body and config["strategy_options"]["protocol"] == "case-study"
    assert config["agent_params"] == {}
