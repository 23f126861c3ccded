"""`bongard study create | list | show`: a human study's design, checked against its dataset and kept
in the results store (issue 54, its first slice: the design; serving it to participants comes next)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from graphs.studies.design import StudyDesign
from results.store import STORE_FILE, ResultsStore
from results.studies import StudyRecords
from tests.cli import run_bongard


def create(home: Path, data: Path, name: str, *args: str) -> str:
    made = run_bongard("study", "create", name, "--data-dir", data, "--home", home, *args)
    assert made.returncode == 0, made.stderr
    return made.stdout


def shown(home: Path, name: str) -> dict[str, Any]:
    result = run_bongard("study", "show", name, "--json", "--home", home)
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_paper_003s_design_three_sessions_of_33_after_the_instructions_problem(
    tmp_path: Path, shared_data: Path
) -> None:
    printed = create(
        tmp_path, shared_data, "paper-003", "--dataset", "bongard-classic", "--task", "direct",
        "--problems", "1-100", "--instructions", "1",
    )  # fmt: skip
    assert "99 problems in 3 session(s) of up to 33, original order" in printed
    design = StudyDesign.from_json(StudyRecords(ResultsStore(tmp_path / STORE_FILE)).get("paper-003").design)
    assert design.instructions == "1" and "1" not in design.problems
    assert [list(session) for session in design.sessions] == [
        [str(n) for n in range(2, 35)], [str(n) for n in range(35, 68)], [str(n) for n in range(68, 101)],
    ]  # fmt: skip
    assert (design.dont_know, design.time_limit_s, design.candidates) == (True, None, None)
    table = run_bongard("study", "show", "paper-003", "--home", tmp_path).stdout
    assert "instructions problem: 1" in table and "2, 3, 4, 5" in table and "68, 69" in table
    listed = run_bongard("study", "list", "--json", "--home", tmp_path)
    assert [(s["name"], s["task"], len(s["problems"])) for s in json.loads(listed.stdout)] == [
        ("paper-003", "direct", 99)
    ]


def test_a_shuffled_study_keeps_its_seed_and_the_same_seed_gives_the_same_order(
    tmp_path: Path, shared_data: Path
) -> None:
    common = ("--dataset", "bongard-classic", "--task", "concept-selection", "--problems", "2-21",
              "--order", "shuffled", "--session-size", "6")  # fmt: skip
    create(tmp_path, shared_data, "a", *common, "--seed", "7", "--candidates", "8")
    create(tmp_path, shared_data, "b", *common, "--seed", "7")
    create(tmp_path, shared_data, "c", *common)
    a, b, c = shown(tmp_path, "a"), shown(tmp_path, "b"), shown(tmp_path, "c")
    expected = [str(n) for n in range(2, 22)]
    random.Random(7).shuffle(expected)
    assert a["problems"] == b["problems"] == expected
    assert (a["candidates"], b["candidates"]) == (8, 4)  # K = 4 unless given
    assert isinstance(c["seed"], int) and sorted(map(int, c["problems"])) == list(range(2, 22))
    design = StudyDesign.from_json(
        {key: value for key, value in c.items() if key not in ("name", "created_at", "participants")}
    )
    shuffled = [str(n) for n in range(2, 22)]
    random.Random(design.seed).shuffle(shuffled)
    assert list(design.problems) == shuffled  # the kept seed replays the order
    assert [len(session) for session in design.sessions] == [6, 6, 6, 2]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("--task", "rules"),
            "no study task 'rules' (tasks: direct, images-to-sides, concept-selection, concept-probe)",
        ),
        (
            ("--task", "direct", "--candidates", "4"),
            "--candidates is K of a concept selection, not of direct",
        ),
        (("--task", "concept-selection", "--candidates", "3"), "K must be one of 2, 4, 8, 16, not 3"),
        (("--task", "direct", "--seed", "3"), "--seed shuffles the problems: give it with --order shuffled"),
        (("--task", "direct", "--problems", "1-3,2"), "problems named twice: 2"),
        (("--task", "direct", "--problems", "1", "--instructions", "1"), "no problem to answer beside"),
        (("--task", "direct", "--problems", "1-3,999"), "no problem '999'"),
        (("--task", "direct", "--time-limit", "0"), "a time limit is a number of seconds above 0, not 0"),
    ],
)
def test_a_design_that_cannot_be_run_is_refused_in_one_line_and_nothing_is_kept(
    tmp_path: Path, shared_data: Path, args: tuple[str, ...], said: str
) -> None:
    refused = run_bongard(
        "study",
        "create",
        "s",
        "--dataset",
        "bongard-classic",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
        *args,
    )
    assert (
        refused.returncode == 2 and said in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    )
    assert StudyRecords(ResultsStore(tmp_path / STORE_FILE)).all() == []


def test_a_name_is_taken_once_and_the_first_design_stays(tmp_path: Path, shared_data: Path) -> None:
    create(
        tmp_path, shared_data, "s", "--dataset", "bongard-classic", "--task", "direct", "--problems", "1-5"
    )
    again = run_bongard(
        "study", "create", "s", "--dataset", "bongard-classic", "--task", "images-to-sides",
        "--data-dir", shared_data, "--home", tmp_path,
    )  # fmt: skip
    assert again.returncode == 2 and "a study named 's' exists already" in again.stderr
    assert shown(tmp_path, "s")["task"] == "direct"
    missing = run_bongard("study", "show", "t", "--home", tmp_path)
    assert missing.returncode == 2 and "no study named 't' (studies: s)" in missing.stderr
