"""Bongard in Wonderland's Task 2 as the paper runs it: one probe per problem for every model.

Recorded on a stand-in OpenAI-protocol server that tells the author's requests from the
models' by the model name each carries. Without published probes the author writes each
problem's probe once, and every later attempt, run and model asks the kept text; with
`-S probes=PATH` no author is asked at all and each panel's answer field is matched exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.schema_replies import minimal_reply, output_schema
from tests.standins.server import StandIn, StandInServer

AUTHORED = "Does the figure hold anything at all?"


def replies(body: Any) -> str:
    """The author writes one probe; a published probe's answer field names the left concept."""
    schema = output_schema(body)
    if schema is not None and "probe" in schema.get("properties", {}):
        return json.dumps({"probe": AUTHORED})
    if schema is None:
        return 'Looking closely.\nanswer = {\n    "contents": "empty"\n}'
    return minimal_reply(body)


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    return standin(responder=replies)


def concept_probe(server: StandInServer, home: Path, shared_data: Path, model: str, *extra: str) -> str:
    """A concept-probe run of classic problems 1 and 2, three attempts; its id."""
    result = run_bongard(
        "run",
        "--strategy",
        "concept-probe",
        "--model",
        f"openai-compatible:{model}@{server.url}/v1",
        "--dataset",
        "bongard-classic",
        "--problems",
        "1-2",
        "--attempts",
        "3",
        "--data-dir",
        shared_data,
        "--home",
        home,
        *extra,
    )
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "Table 9 (Bongard in Wonderland): every panel right in every attempt:" in said
    assert "panel acc." in said and "image acc." not in said  # the probes' panels, not test images
    return ResultsStore(home / STORE_FILE).resolve_run("latest")


def requests_by(server: StandInServer, model: str) -> int:
    return sum(request.body["model"] == model for request in server.model_requests())


def test_each_problem_gets_one_authored_probe_for_every_attempt_run_and_model(
    server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    author = ("--author", f"openai-compatible:author@{server.url}/v1")
    first = concept_probe(server, tmp_path, shared_data, "m1", *author)
    assert requests_by(server, "author") == 2  # one per problem, not one per attempt
    assert requests_by(server, "m1") == 2 * 3 * 12
    second = concept_probe(server, tmp_path, shared_data, "m2", *author)
    assert requests_by(server, "author") == 2  # the kept probes: no new author call
    store = ResultsStore(tmp_path / STORE_FILE)
    probes = {
        (run, problem, attempt): answer.details["probe"]["text"]
        for run in (first, second)
        for problem, attempt, answer in store.answer_records(run)
    }
    assert len(probes) == 12 and set(probes.values()) == {AUTHORED}


def test_the_author_is_named_not_taken_from_the_model_under_test(
    server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    result = run_bongard(
        "run",
        "--strategy",
        "concept-probe",
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
    )
    assert result.returncode == 2 and "give --author SPEC" in result.stderr
    assert not list(server.model_requests())


def published_folder(root: Path) -> Path:
    """A checkout laid out as the authors publish it (our own probe texts, not theirs)."""
    concepts = root / "prompts" / "concepts"
    concepts.mkdir(parents=True)
    for number in (1, 2):
        (concepts / f"concept_prompt_{number}.txt").write_text(
            f'Probe {number}: is the frame empty? Answer as answer = {{"contents": <empty or not empty>}}',
            encoding="utf-8",
        )
    (concepts / "contrary_concepts.json").write_text(
        json.dumps({"1": ["empty", "not empty"], "2": ["large", "small"]}), encoding="utf-8"
    )
    return root


def test_published_probes_are_asked_as_written_and_matched_exactly(
    server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    checkout = published_folder(tmp_path / "bongard-in-wonderland")
    run_id = concept_probe(server, tmp_path / "home", shared_data, "m", "-S", f"probes={checkout}")
    assert requests_by(server, "m") == 2 * 3 * 12  # no author call
    for request in server.model_requests():
        system, user = request.body["messages"]
        assert system["role"] == "system" and "abstract properties" in system["content"]
        [text] = [block["text"] for block in user["content"] if block["type"] == "text"]
        assert text.startswith("Probe ") and "answer = {" in text  # sent as written
    answers = {
        p: a
        for p, attempt, a in ResultsStore(tmp_path / "home" / STORE_FILE).answer_records(run_id)
        if attempt == 0
    }
    one, two = answers["bongard-classic/1"], answers["bongard-classic/2"]
    assert one.details["panels_right"] == 6 and one.correct is False  # "empty" is problem 1's left
    assert set(one.sides.values()) == {"left"}
    assert two.details["panels_right"] == 0 and set(two.sides.values()) == {None}  # neither answer
    assert one.details["probe"]["author"].startswith("published: ")


def test_a_published_probe_that_is_missing_is_named(
    server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    checkout = published_folder(tmp_path / "checkout")
    result = run_bongard(
        "run",
        "--strategy",
        "concept-probe",
        "--model",
        f"openai-compatible:m@{server.url}/v1",
        "--dataset",
        "bongard-classic",
        "--problems",
        "3",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
        "-S",
        f"probes={checkout}",
    )
    assert "no concept_prompt_3.txt for bongard-classic/3" in result.stdout + result.stderr
    assert not list(server.model_requests())
    # The probes folder is a stored option: a retry would fail the same way, so none is offered.
    assert "--retry-errors" not in result.stdout
    assert "1 failed item(s) would fail the same way again" in result.stdout


def test_a_kept_probe_is_read_by_another_process_instead_of_written_again(tmp_path: Path) -> None:
    """Two keepers on one folder stand for two processes: the first writer's text is everyone's."""
    import asyncio

    from graphs.kept import KeptResults

    made: list[str] = []

    def maker(text: str) -> Any:
        async def make() -> dict[str, Any]:
            made.append(text)
            return {"text": text}

        return make

    key = ("bongard-classic/1", "author", "left", "right")
    first, fresh = asyncio.run(KeptResults(tmp_path).get_or_make("probes", key, maker("one")))
    again, fresh_again = asyncio.run(KeptResults(tmp_path).get_or_make("probes", key, maker("two")))
    assert (first, fresh, made) == ({"text": "one"}, True, ["one"])
    assert (again, fresh_again) == ({"text": "one"}, False)
    assert not list(tmp_path.rglob("*.tmp"))  # the temporary file is gone


def authors_reading(response: str) -> str:
    """An independent reading of the authors' scoring (`eval_detect_concepts.py`): the piece between
    the first "{" and the one after it, cut at its first "}"; "error" where there is no "{" at all;
    then what follows the last colon, quotes removed, stripped."""
    pieces = response.split("{")
    if len(pieces) < 2:
        return "error"
    field = pieces[1].partition("}")[0]
    return field.rpartition(":")[2].replace("'", "").replace('"', "").strip()


REPLY_FORMS = {
    "plain": 'answer = {"contents": "empty"}',
    "single quotes": "answer = {'contents': 'not empty'}",
    "no braces": "The frame is empty.",
    "nested braces": 'answer = {"contents": {"value": "empty"}}',
    "no closing brace": 'answer = {"contents": "empty"',
    "two fields": 'first {"a": "small"} then {"contents": "large"}',
    "colons inside": 'answer = {"contents": "ratio: 2:1"}',
    "newlines and code fence": '```json\n{\n    "contents": "not empty"\n}\n```',
}
"""The eight reply forms: the authors' own format, and the ways a reply departs from it."""


@pytest.mark.parametrize("reply", REPLY_FORMS.values(), ids=REPLY_FORMS.keys())
def test_a_published_probe_reply_is_read_as_the_authors_read_it(reply: str) -> None:
    from graphs.strategies.wonderland import published_answer

    read = published_answer(reply)
    assert (read if read is not None else "error") == authors_reading(reply)
