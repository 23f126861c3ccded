"""`bongard judge` on a stored run: a judge kind a package installs through an entry point, used
and listed without editing the toolkit, and judging errors ending in one line, exit code 2."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from datasets_io.plugins import Registry
from graphs.cli import main
from graphs.runs.runner import RunConfig
from judges import specs
from results.frames import store_frame
from results.store import STORE_FILE
from tests.distributions import installed_distribution
from tests.stored_runs import Stored, run_into_store

PLUGIN = '''
"""A package's own judge: ok when the answer has at least N words; it reports the true concept."""
from datasets_io.problem import Concept
from judges.verdict import Verdict


class WordCount:
    def __init__(self, least: int) -> None:
        self.least = least

    @property
    def name(self) -> str:
        return f"words:{self.least}"

    async def judge(self, concept: Concept, answer: str) -> Verdict:
        label = "ok" if len(answer.split()) >= self.least else "wrong"
        return Verdict(judge=self.name, label=label, raw_text=f"true left rule: {concept.left}")


def build(argument: str) -> WordCount:
    return WordCount(int(argument or 1))
'''


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Stored:
    """Open-ended answers of the offline perception agent to two classic problems."""
    config = RunConfig(
        strategy="open-ended",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        agents={"reasoner": "perception"},
        problems=["6", "31"],
    )
    return run_into_store(tmp_path_factory.mktemp("judged"), config)


@pytest.fixture
def words_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(specs, "JUDGE_KINDS", Registry(specs.ENTRY_POINT_GROUP, "judge kind"))
    with installed_distribution(
        tmp_path / "site",
        monkeypatch,
        "word-count-judge",
        {"word_count_judge": PLUGIN},
        {specs.ENTRY_POINT_GROUP: {"words": "word_count_judge:build"}},
    ):
        yield


def bongard(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str | Path
) -> tuple[int | str | None, str, str]:
    """The `bongard` command run in this process: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["bongard", *map(str, args)])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    return exited.value.code, captured.out, captured.err


def test_a_judge_kind_from_an_entry_point_judges_a_stored_run(
    words_judge: None, stored: Stored, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = stored.store.path.parent
    code, out, err = bongard(
        monkeypatch,
        capsys,
        "judge",
        stored.run_id,
        "--judges",
        "words:1,words:1000",
        "--policy",
        "vote:1",
        "--home",
        home,
    )
    assert code == 0, err
    assert "2 answers judged" in out
    assert "words:1: 2 ok, 0 wrong, 0 abstain" in out and "words:1000: 0 ok, 2 wrong, 0 abstain" in out
    verdicts = store_frame(home / STORE_FILE, "verdicts", [stored.run_id])
    assert set(verdicts["judge"]) == {"words:1", "words:1000"}
    assert verdicts["raw_text"].str.startswith("true left rule: ").all()  # it was given the true concept


def test_an_unknown_judge_lists_the_installed_judge_kinds_in_one_line(
    words_judge: None, stored: Stored, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = stored.store.path.parent
    code, out, err = bongard(
        monkeypatch, capsys, "judge", stored.run_id, "--judges", "word:3", "--home", home
    )
    assert code == 2 and out == ""
    [line] = err.splitlines()
    assert line.startswith("error: unknown judge 'word:3' (did you mean 'words'?); ")
    assert "; judge kinds: embedding, words; " in line
    assert "or an agent spec PROVIDER:MODEL with a provider of: " in line


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--policy", "vote:x"], "error: unknown voting policy 'vote:x'; policies: vote:K"),
        (["--judges", "embedding:high"], "error: embedding judge threshold must be a number in (0, 1]"),
    ],
)
def test_judging_errors_end_in_one_line_and_exit_code_2(
    options: list[str],
    message: str,
    stored: Stored,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = stored.store.path.parent
    code, _, err = bongard(
        monkeypatch, capsys, "judge", stored.run_id, "--judges", "embedding", *options, "--home", home
    )
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert message in err
