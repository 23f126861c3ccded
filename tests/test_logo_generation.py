"""Fresh Bongard-LOGO problems from the authors' generator (PyPI `bongard` 0.0.2), generated for real:
Tk's turtle on a virtual display (Xvfb), PostScript through ghostscript."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from datasets_io.generation.logo_concepts import ShapeTables
from datasets_io.generation.logo_generation import (
    PARTIAL,
    GeneratorUnavailable,
    check_requirements,
    generate,
    programs_file,
    read_manifest,
    task_name,
)
from datasets_io.generation.set_provenance import set_provenance
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.logo_tables import write_shape_tables

try:
    check_requirements()
except GeneratorUnavailable as missing:
    pytest.skip(f"the generator cannot run here: {missing}", allow_module_level=True)

SEED = 20261126


@pytest.fixture(scope="module")
def generation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """3 free-form problems through `bongard generate logo`: their folder and what it printed."""
    out = tmp_path_factory.mktemp("logo") / "fresh"
    made = run_bongard("generate", "logo", "--out", out, "--count", "3", "--seed", str(SEED))
    assert made.returncode == 0, made.stderr
    assert f"3 free-form problems from seed {SEED} (bongard 0.0.2)" in made.stdout
    return out, made.stdout


@pytest.fixture(scope="module")
def generated(generation: tuple[Path, str]) -> Path:
    return generation[0]


def test_the_printed_command_solves_the_problems_just_made(
    generation: tuple[Path, str], tmp_path: Path
) -> None:
    [command] = re.findall(r"`(bongard run [^`]+)`", " ".join(generation[1].split()))
    ran = run_bongard(*shlex.split(command)[1:], "--home", tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    assert store.summary(store.resolve_run("latest")).done == 3


def images(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.png"))}


def test_generated_problems_are_a_bongard_logo_dataset_the_offline_agent_solves(
    generated: Path, tmp_path: Path
) -> None:
    tasks = ["ff_nact4_0000", "ff_nact5_0001", "ff_nact6_0002"]
    assert sorted(p.name for p in (generated / "ff" / "images").iterdir()) == tasks
    for task in tasks:
        for side in ("1", "0"):
            assert sorted(p.name for p in (generated / "ff" / "images" / task / side).iterdir()) == [
                f"{n}.png" for n in range(7)
            ]
    programs = json.loads((generated / "ff" / programs_file("ff")).read_text())
    positives, negatives = programs["ff_nact5_0001"]
    assert len(positives) == len(negatives) == 7 and all(p == positives[0] for p in positives)
    assert [len(shape) for shape in positives[0]] == [5]  # one shape of 5 strokes, in every positive
    assert all(n != positives[0] for n in negatives)  # each negative perturbs it
    manifest = read_manifest(generated)
    assert manifest is not None and (manifest.seed, manifest.count, manifest.tasks) == (SEED, 3, tasks)
    valid = run_bongard("datasets", "validate", f"bongard-logo:{generated}")
    assert valid.returncode == 0 and "all 3 problems usable" in valid.stdout, valid.stdout
    solved = run_bongard(
        "run",
        "--strategy",
        "images-to-sides",
        "--model",
        "perception",
        "--dataset",
        f"bongard-logo:{generated}",
        "--home",
        tmp_path,
    )
    assert solved.returncode == 0, solved.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.done, summary.scored, summary.failed) == (3, 3, 0)


def test_the_same_seed_gives_the_same_programs_and_pixels_and_a_resume_redraws_only_what_is_missing(
    generated: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    shutil.copytree(generated, again)
    (again / "ff" / programs_file("ff")).unlink()
    kept = (again / "ff" / "images" / task_name(0) / "1" / "0.png").stat().st_mtime_ns
    shutil.rmtree(again / "ff" / "images" / task_name(1))
    (again / "ff" / "images" / f"{PARTIAL}killed").mkdir()  # a problem a killed generation left half-drawn
    generate(again, 3, SEED)
    assert (again / "ff" / "images" / task_name(0) / "1" / "0.png").stat().st_mtime_ns == kept  # not redrawn
    assert images(again / "ff" / "images") == images(generated / "ff" / "images")  # redrawn the same
    first = json.loads((generated / "ff" / programs_file("ff")).read_text())
    assert json.loads((again / "ff" / programs_file("ff")).read_text()) == first
    assert not list((again / "ff" / "images").glob(f"{PARTIAL}*"))
    generate(tmp_path / "other", 1, SEED + 1)
    other = json.loads((tmp_path / "other" / "ff" / programs_file("ff")).read_text())
    assert other[task_name(0)] != first[task_name(0)]  # another seed, another problem


def test_a_missing_requirement_is_one_line_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "gs" else real_which(name))
    refused = run_bongard("generate", "logo", "--out", tmp_path / "x", "--count", "1")
    assert refused.returncode == 2
    assert (
        refused.stderr.strip()
        == "error: ghostscript is missing (it turns the drawings into images): apt install ghostscript"
    )
    assert not (tmp_path / "x").exists()
    bad_type = run_bongard("generate", "logo", "--out", tmp_path / "x", "--types", "bd")
    assert bad_type.returncode == 2 and "bd and hd need the authors' shape tables" in bad_type.stderr
    no_tables = run_bongard(
        "generate", "logo", "--out", tmp_path / "x", "--types", "bd", "--shapes", tmp_path
    )
    assert no_tables.returncode == 2
    assert no_tables.stderr.strip() == (
        f"error: no human_designed_shapes.tsv in {tmp_path} "
        "(the shape tables of a Bongard-LOGO checkout, data/)"
    )


def test_basic_and_abstract_problems_come_from_the_users_shape_tables(tmp_path: Path) -> None:
    """Made-up tables in the authors' columns: problem 0 states one shape (attribute), problem 1 two;
    a basic negative swaps a shape for another of its super class; an abstract positive's shape has
    the attribute and a negative's lacks it. The set is a Bongard-LOGO dataset; the manifest names
    the tables by digest; the same seed gives the same programs."""
    checkout = write_shape_tables(tmp_path / "checkout")
    out = tmp_path / "fresh"
    made = run_bongard(
        "generate",
        "logo",
        "--out",
        out,
        "--count",
        "2",
        "--seed",
        str(SEED),
        "--types",
        "bd,hd",
        "--shapes",
        checkout,
    )
    assert made.returncode == 0, made.stderr
    assert f"2 basic, 2 abstract problems from seed {SEED}" in made.stdout
    manifest = read_manifest(out)
    assert manifest is not None and manifest.types == ["bd", "hd"] and manifest.count == 2
    assert manifest.shape_tables is not None and len(manifest.shape_tables) == 2
    basic = [t for t in manifest.tasks if t.startswith("bd_")]
    abstract = [t for t in manifest.tasks if t.startswith("hd_")]
    assert [t.count("made_up_") for t in basic] == [1, 2]
    assert [len(t.split("_", 1)[1].rsplit("_", 1)[0].split("-")) for t in abstract] == [1, 2]
    programs = json.loads((out / "bd" / programs_file("bd")).read_text())
    positives, negatives = programs[basic[0]]
    sides = {len(shape) for image in positives for shape in image}
    assert len(positives) == len(negatives) == 7 and len(sides) == 1  # one shape, drawn in every positive
    strokes = sides.pop()
    assert all(len(image[0]) == strokes for image in negatives)  # swapped within its super class (same sides)
    attributes = json.loads((out / "hd" / programs_file("hd")).read_text())
    assert set(attributes) == set(abstract)
    valid = run_bongard("datasets", "validate", f"bongard-logo:{out}")
    assert valid.returncode == 0 and "all 4 problems usable" in valid.stdout, valid.stdout
    again = tmp_path / "again"
    generate(again, 2, SEED, ["bd"], ShapeTables.find(checkout))
    assert json.loads((again / "bd" / programs_file("bd")).read_text()) == programs


def test_the_perception_benchmark_reports_fresh_problems_with_n_and_an_interval(
    generated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.perception import report_fresh

    report_fresh(3, SEED, generated)  # the fixture's problems are kept, not drawn again
    printed = capsys.readouterr().out
    assert "on 3 fresh Bongard-LOGO free-form problems" in printed
    assert "held-out pair (image 6 of each side)" in printed and "/ 3" in printed and "(Wilson)" in printed
    assert "49-split mean" in printed


def test_compare_puts_a_published_set_beside_fresh_problems_of_the_same_kind(
    generated: Path, tmp_path: Path
) -> None:
    """The published set stands in as a copy of the fresh one without its manifest: one model, one
    strategy on each, the two accuracies side by side with their intervals, in compare and the viewer."""
    published = tmp_path / "published"
    shutil.copytree(generated, published)
    (published / "generation.json").unlink()
    for folder in (published, generated):
        ran = run_bongard(
            "run",
            "--strategy",
            "images-to-sides",
            "--model",
            "perception",
            "--dataset",
            f"bongard-logo:{folder}",
            "--home",
            tmp_path,
        )
        assert ran.returncode == 0, ran.stderr
    compared = run_bongard("compare", "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr
    said = " ".join(compared.stdout.split())
    assert "contamination check (published or unrecorded sets vs freshly generated problems):" in said
    assert (
        "images-to-sides · perception: unrecorded (no generation record: the published release, or problems "
        f"made without one) bongard-logo:{published}"
    ) in said
    assert f"fresh bongard-logo:{generated}" in said and "drop +0.000, the intervals overlap" in said
    from starlette.testclient import TestClient

    from graphs.view.app import create_app

    with TestClient(create_app(tmp_path / STORE_FILE), base_url="http://127.0.0.1") as client:
        runs = "&".join(f"runs={run['id']}" for run in client.get("/api/runs").json())
        assert "Contamination check" in client.get(f"/compare?{runs}").text


def test_freshness_is_read_from_the_checked_generation_record_across_kinds_of_problem(
    generated: Path, shared_data: Path, tmp_path: Path
) -> None:
    """Classic problems (published) beside fresh Bongard-LOGO ones get their line, said to differ in
    kind; a copy of the fresh set with one image changed keeps its record but is not counted fresh."""
    fresh = set_provenance("bongard-logo", generated)
    assert fresh.kind == "fresh" and f"seed {SEED} on 20" in fresh.words and "images checked" in fresh.words
    altered = tmp_path / "altered"
    shutil.copytree(generated, altered)
    first = sorted(altered.rglob("*.png"))[0]
    first.write_bytes(first.read_bytes() + b"\0")
    assert set_provenance("bongard-logo", altered).kind == "altered"
    held_out = ["-O", "holdout_test=true", "--problems", "1-3"]  # classic problems hold no test images
    for dataset, options in (
        ("bongard-classic", held_out),
        (f"bongard-logo:{generated}", []),
        (f"bongard-logo:{altered}", []),
    ):
        ran = run_bongard(
            "run", "--strategy", "images-to-sides", "--model", "perception", "--dataset", dataset, *options,
            "--data-dir", shared_data, "--home", tmp_path,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
    compared = run_bongard("compare", "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr
    said = " ".join(compared.stdout.split())
    assert "images-to-sides · perception: published bongard-classic " in said
    assert f"fresh bongard-logo:{generated} " in said
    assert (
        "other kinds of problem (bongard-classic vs bongard-logo): the drop mixes memory with difficulty"
        in said
    )
    assert f"bongard-logo:{altered}: its generation record does not match its images" in said
    assert f"fresh bongard-logo:{altered}" not in said
