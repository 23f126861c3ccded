"""Each run keeps what produced it: code, packages, prompts and data, one record per session."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.file_digests import DIGESTS_FILE
from datasets_io.problem import BongardProblem
from graphs.runs.provenance import dataset_fingerprint, git_commit, provenance_lines
from graphs.runs.runner import RunConfig, resume_run
from results.store import ResultsStore
from tests.cli import run_bongard
from tests.stored_runs import run_into_store

CONFIG = {
    "strategy": "images-to-sides",
    "dataset": "bongard-classic",
    "agents": {"reasoner": "perception"},
    "problems": ["1", "2"],
    "dataset_options": {"holdout_test": "true"},
}


def built_in_prompt_hash(name: str) -> str:
    text = files("graphs").joinpath("prompts", "case_study", f"{name}.md").read_text(encoding="utf-8")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_run_records_its_code_packages_prompts_and_data(tmp_path: Path, shared_data: Path) -> None:
    stored = run_into_store(tmp_path, RunConfig.model_validate({**CONFIG, "data_dir": str(shared_data)}))
    [session] = stored.store.provenance(stored.run_id)
    assert session["packages"]["langgraph"] and session["packages"]["pydantic"]
    if (Path(__file__).parent.parent / ".git").exists():
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        assert session["toolkit"]["git"].removesuffix("+dirty") == head.stdout.strip()
    assert session["prompts"]["case_study/images_to_sides"] == {
        "sha256": built_in_prompt_hash("images_to_sides"),
        "source": "built-in case_study/images_to_sides.md",
    }
    assert session["dataset"]["problems"] == 2 and len(session["dataset"]["sha256"]) == 64
    shown = run_bongard("runs", "show", stored.run_id, "--home", tmp_path)
    assert f"data: 2 problems, sha256 {session['dataset']['sha256']}" in shown.stdout
    assert "case_study/images_to_sides sha256 " + built_in_prompt_hash("images_to_sides")[:16] in shown.stdout


def test_a_resume_with_other_prompts_is_told_apart(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = run_into_store(tmp_path, RunConfig.model_validate({**CONFIG, "data_dir": str(shared_data)}))
    overrides = tmp_path / "my-prompts"
    monkeypatch.setenv("BONGARD_PROMPTS", str(overrides))
    store = ResultsStore(tmp_path / "store.sqlite")
    run_id, runner = resume_run(stored.run_id, store, home=tmp_path)
    asyncio.run(runner.run(run_id, retry_errors=True))
    first, second = store.provenance(run_id)
    assert second["prompt_overrides"] == str(overrides) and second["prompts"] == {}  # nothing left to solve
    assert provenance_lines([first, second])[-1] == f"resume 1: prompt_overrides: None -> {str(overrides)!r}"
    assert provenance_lines([first, first])[-1] == "resume 1: same code, packages, prompts and data"


def test_the_data_fingerprint_follows_the_image_bytes_not_where_they_lie(
    tmp_path: Path, shared_data: Path
) -> None:
    problems = open_dataset("bongard-classic", shared_data).scan(["1", "2"]).problems
    moved = tmp_path / "moved.png"
    shutil.copyfile(problems[0].left[0].path, moved)
    relocated = [
        problems[0].model_copy(
            update={"left": [problems[0].left[0].model_copy(update={"path": moved}), *problems[0].left[1:]]}
        ),
        problems[1],
    ]
    assert dataset_fingerprint(relocated) == dataset_fingerprint(problems)
    moved.write_bytes(moved.read_bytes() + b"\0")
    assert dataset_fingerprint(relocated)["sha256"] != dataset_fingerprint(problems)["sha256"]


def test_no_commit_outside_a_git_checkout(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None


def test_the_data_fingerprint_is_computed_beside_the_calls_and_recorded_when_the_pass_ends(
    tmp_path: Path, shared_data: Path
) -> None:
    """Hashing every image before the first call cost 1.9 s at 5,000 problems (issue 34): while the
    pass runs the stored record says the fingerprint is pending; the pass's end writes it."""
    from agents.prompt_library import PromptLibrary
    from graphs.runs.provenance import FINGERPRINT_PENDING
    from graphs.runs.runner import Runner

    config = RunConfig.model_validate({**CONFIG, "data_dir": str(shared_data)})
    store = ResultsStore(tmp_path / "store.sqlite")
    runner = Runner(config, store, tmp_path)
    run_id = store.create_run(runner.config.model_dump(mode="json"), "test")
    with runner.held(run_id, PromptLibrary()):
        [during] = store.provenance(run_id)
        assert during["dataset"] == FINGERPRINT_PENDING
        assert provenance_lines([during])[2].startswith("data: not fingerprinted")
    [after] = store.provenance(run_id)
    assert after["dataset"] == dataset_fingerprint(runner.loaded())
    assert (tmp_path / DIGESTS_FILE).is_file()  # the images' digests kept for the next session
    assert (
        provenance_lines([during, after])[-1]
        == "resume 1: data: not fingerprinted in one of the two sessions"
    )


def copied_problems(shared_data: Path, folder: Path) -> list[BongardProblem]:
    """Classic problems 1-3 with their panels copied into `folder`, where a test may edit them."""
    problems = open_dataset("bongard-classic", shared_data).scan(["1", "2", "3"]).problems
    copied = []
    for problem in problems:
        moved = {}
        for side in ("left", "right", "test_left", "test_right"):
            panels = []
            for panel in getattr(problem, side):
                path = folder / problem.id / f"{side}-{panel.ref}{panel.path.suffix}"
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(panel.path, path)
                panels.append(panel.model_copy(update={"path": path}))
            moved[side] = panels
        copied.append(problem.model_copy(update=moved))
    return copied


def test_a_kept_digest_spares_reading_an_unchanged_image_and_any_change_is_read_again(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every session hashed every image of its run: 70,000 files and 7.8 s at 5,000 problems."""
    from datasets_io import file_digests

    problems = copied_problems(shared_data, tmp_path / "data")
    kept = tmp_path / "home" / file_digests.DIGESTS_FILE
    reads: list[int] = []
    real_opened = file_digests.opened

    @contextlib.contextmanager
    def counted(path: Path | None) -> Iterator[file_digests.FileDigests]:
        with real_opened(path) as digests:
            yield digests
        reads.append(digests.read)

    monkeypatch.setattr("graphs.runs.provenance.opened", counted)
    images = sum(len(p.left) + len(p.right) + len(p.test_left) + len(p.test_right) for p in problems)
    fresh = dataset_fingerprint(problems)
    assert dataset_fingerprint(problems, kept) == fresh and reads[-1] == images  # all read, then kept
    assert dataset_fingerprint(problems, kept) == fresh and reads[-1] == 0  # none read
    edited = problems[1].left[0].path
    before = edited.stat()
    flipped = bytearray(edited.read_bytes())
    flipped[-1] ^= 0xFF  # the same size
    edited.write_bytes(bytes(flipped))
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime put back: the ctime moved
    changed = dataset_fingerprint(problems, kept)
    assert reads[-1] == 1 and changed["sha256"] != fresh["sha256"]
    assert changed == dataset_fingerprint(problems)  # what reading every file gives
    replaced = problems[2].right[0].path
    shutil.copyfile(problems[2].right[1].path, replaced.with_suffix(".new"))
    replaced.with_suffix(".new").replace(replaced)  # another file renamed onto it: another inode
    assert dataset_fingerprint(problems, kept) == dataset_fingerprint(problems) and reads[-2] == 1


def test_a_broken_digests_file_leaves_every_image_read(tmp_path: Path, shared_data: Path) -> None:
    from datasets_io.file_digests import opened

    problems = copied_problems(shared_data, tmp_path / "data")
    kept = tmp_path / "digests.sqlite"
    kept.write_bytes(b"not a database" * 100)
    assert dataset_fingerprint(problems, kept) == dataset_fingerprint(problems)
    with opened(kept) as digests:
        digests.sha256s([problems[0].left[0].path])
    assert digests.read == 1
    assert kept.read_bytes() == b"not a database" * 100  # left as it was
