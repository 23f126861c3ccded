"""Seeded, stratified samples of a dataset's problems (the case study's HOI and OpenWorld test sets)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from datasets_io.problem import BongardProblem
from datasets_io.sampling import SampleError, SampleSpec, draw, stratum
from datasets_io.wonderland_categories import wonderland_category
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard


def by_category(classic: list[BongardProblem]) -> list[BongardProblem]:
    """The classic problems with Wonderland's category as metadata: 41 spatial, 31 concept, 15
    number, 7 same, 6 size."""
    return [
        p.model_copy(update={"metadata": {"category": wonderland_category("bongard-classic", p.id)}})
        for p in classic
    ]


def test_each_stratum_keeps_its_share_and_the_size_is_exact(classic: list[BongardProblem]) -> None:
    problems = by_category(classic)
    sample = draw(problems, SampleSpec(size=20, stratify="metadata.category", seed=3))
    assert len(sample) == 20
    shares = Counter(stratum(p, "metadata.category") for p in sample)
    # quotas 8.2, 6.2, 3.0, 1.4, 1.2: floors 8, 6, 3, 1, 1 and the 1 left to the largest remainder
    assert shares == {"spatial": 8, "concept": 6, "number": 3, "same": 2, "size": 1}
    order = [p.id for p in problems]
    assert [p.id for p in sample] == sorted((p.id for p in sample), key=order.index)  # dataset order


def test_a_seed_fixes_the_sample_and_another_seed_changes_it(classic: list[BongardProblem]) -> None:
    spec = SampleSpec(size=10, stratify="concept", seed=1)
    first = [p.id for p in draw(classic, spec)]
    assert first == [p.id for p in draw(classic, spec)]
    assert first != [p.id for p in draw(classic, spec.model_copy(update={"seed": 2}))]
    assert len(draw(classic, SampleSpec(size=100))) == 100


def test_an_impossible_sample_is_refused_by_name(classic: list[BongardProblem]) -> None:
    with pytest.raises(SampleError, match="a sample of 101 from 100 problems"):
        draw(classic, SampleSpec(size=101))
    with pytest.raises(SampleError, match="cannot stratify by 'colour'"):
        draw(classic, SampleSpec(size=5, stratify="colour"))


def test_a_sampled_run_stores_its_draw(
    shared_data: Path, tmp_path: Path, classic: list[BongardProblem]
) -> None:
    home = ("--home", tmp_path)
    common = ("--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
              "--data-dir", shared_data, *home)  # fmt: skip
    result = run_bongard("run", *common, "--sample", "5", "--stratify", "concept", "--seed", "7")
    assert result.returncode == 0, result.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    config = store.run_config(store.resolve_run("latest"))
    assert config["sample"] == {"size": 5, "stratify": "concept", "seed": 7}
    assert config["problems"] == [p.id for p in draw(classic, SampleSpec(size=5, stratify="concept", seed=7))]
    assert store.summary(store.resolve_run("latest")).done == 5
    resumed = run_bongard("run", "--resume", "latest", *home)
    assert resumed.returncode == 0 and store.run_ids() == [store.resolve_run("latest")]  # no new draw
    both = run_bongard("run", *common, "--sample", "5", "--problems", "1-9")
    assert both.returncode == 2 and "give --problems or --sample, not both" in both.stderr
