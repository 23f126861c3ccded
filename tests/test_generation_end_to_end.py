"""The generation pipeline from the command line, offline, as a user runs it.

The offline perception agent turns each source panel into a drawing prompt, the
real llama.cpp server with SmolLM2-135M-Instruct writes the variants (a weak model:
the test checks structure; an instruct model ends its answers where the base Gemma
writes on to the token limit, 13 s against 27 s here), the deterministic shapes
generator renders them, a human review is given as a CSV, and the weight-free
classical embedder feeds Algorithm 2. The dataset written is read back by the
loader, its variants too, and a strategy runs on it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.cli import run_bongard

REPO = Path(__file__).resolve().parent.parent


def test_generate_review_resume_variants_and_run(tmp_path: Path, shared_data: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "generated"
    generated = run_bongard(
        "generate",
        "--source",
        "bongard-classic",
        "-O",
        "holdout_test=true",
        "--problems",
        "6,31",
        "--out",
        out,
        "--describer",
        "perception",
        "--augmenter",
        "llamacpp:smollm2-135m",
        "-M",
        "temperature=0",
        "-M",
        "max_tokens=200",
        "--generator",
        "shapes",
        "--embedder",
        "classical",
        "--variations",
        "2",
        "--panels",
        "2",
        "--subsets",
        "2",
        "--size",
        "128",
        "--data-dir",
        shared_data,
        "--home",
        home,
        timeout=600,
    )
    assert generated.returncode == 0, generated.stderr
    assert "48 images of 2 sources await review" in generated.stdout
    assert "calls in flight: up to 4 (--concurrency)" in generated.stdout  # the default, as a run's

    template = tmp_path / "review.csv"
    assert run_bongard("review", "latest", "--template", template, "--home", home).returncode == 0
    rows = list(csv.DictReader(template.open(encoding="utf-8")))
    assert len(rows) == 48 and {r["concept"] for r in rows} == {
        "Triangles",
        "Quadrangles",
        "One line",
        "Two lines",
    }
    rejected = {r["image_id"] for r in rows if r["path"].endswith("/0-2.png")}
    with (tmp_path / "decisions.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_id", "decision"])
        writer.writerows([r["image_id"], "none" if r["image_id"] in rejected else r["side"]] for r in rows)
    decided = run_bongard("review", "latest", "--decisions", tmp_path / "decisions.csv", "--home", home)
    assert (
        decided.returncode == 0
        and "stored 48 decisions" in decided.stdout
        and "all decided" in decided.stdout
    )

    resumed = run_bongard(
        "generate", "--resume", "latest", "--data-dir", shared_data, "--home", home, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"wrote 8 problems to {out}" in resumed.stdout
    assert (
        (out / "dataset.json").is_file() and (out / "labels.csv").is_file() and (out / "pool.json").is_file()
    )

    variants = run_bongard(
        "variants",
        out,
        "--embedder",
        "classical",
        "--panels",
        "3",
        "--tvt",
        "2",
        "--impure",
        "--subsets",
        "2",
    )
    assert variants.returncode == 0, variants.stderr
    for name in ("l3.json", "train.json", "validation.json", "test.json", "dataset-impure.json"):
        assert f"{name}: " in variants.stdout, variants.stdout
    for manifest in ("dataset.json", "l3.json", "test.json", "dataset-impure.json"):
        check = run_bongard("datasets", "validate", f"bongard-rwr-plus:{out}", "-O", f"manifest={manifest}")
        assert check.returncode == 0, check.stdout + check.stderr

    ran = run_bongard(
        "run",
        "--strategy",
        "image-to-side",
        "--model",
        "similarity",
        "--dataset",
        f"bongard-rwr-plus:{out}",
        "--home",
        home,
        cwd=REPO,
    )
    assert ran.returncode == 0 and "8/8 items done, 0 failed" in ran.stdout, ran.stderr
    pool = json.loads((out / "pool.json").read_text())
    assert {str(i["image_id"]) for i in pool["images"] if i["decision"] == "none"} == rejected


def test_a_missing_generator_package_is_named_with_the_extra_to_install(
    tmp_path: Path, shared_data: Path
) -> None:
    result = run_bongard(
        "generate",
        "--source",
        "bongard-rwr",
        "--problems",
        "31",
        "--out",
        tmp_path / "out",
        "--model",
        "perception",
        "--generator",
        "flux",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path / "home",
    )
    assert result.returncode == 2
    assert (
        "image generator flux needs diffusers, torch, not installed: pip install 'bongard-agents[flux]'"
        in (" ".join(result.stderr.split()))
    )
