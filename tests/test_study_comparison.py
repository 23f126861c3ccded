"""A study's participants beside model runs, as paper 003's Figure 4 (issue 54): `bongard compare
--study` and the viewer's study page, checked against hand counts and statsmodels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from datasets_io.records import Answer
from datasets_io.wonderland_categories import wonderland_category
from graphs.studies.design import design_study
from graphs.studies.participants import Study
from results.store import STORE_FILE, ResultsStore
from results.studies import StudyRecords
from tests.cli import run_bongard

PROBLEMS = ["2", "3", "8", "14", "23", "27", "56"]
"""Two of size, one concept, one spatial, two number, one same (Wonderland's categories)."""
P01 = {"2", "3", "8", "23", "56"}
P02 = {"2", "8", "14", "27"}
MODEL_A = {"2", "3", "14"}
MODEL_B = {"8", "23", "27", "56"}


def images_to_sides_study(store: ResultsStore, data: Path) -> Study:
    from datasets_io.catalog import open_dataset

    options = {"holdout_test": "true"}
    dataset = open_dataset("bongard-classic", data, options)
    design = design_study(
        dataset, "bongard-classic", "images-to-sides", selection=PROBLEMS, session_size=7,
        data_dir=str(data), options=options,
    )  # fmt: skip
    StudyRecords(store).create("fig4", design.to_json())
    return Study(store, "fig4")


def participate(
    study: Study, pseudonym: str, right: set[str], dont_know: frozenset[str] = frozenset()
) -> str:
    """A participant who puts both test images right on `right`'s problems and swaps them elsewhere."""
    participant, _ = study.invite(pseudonym)
    for problem in study.design.problems:
        study.show(participant, problem)
        question = study.question(problem)
        sides = {ref: question.panel(ref).side for ref in question.tests}
        if problem not in right:
            sides = {ref: "right" if side == "left" else "left" for ref, side in sides.items()}
        study.answer(participant, problem, {"dont_know": True} if problem in dont_know else {"sides": sides})
    return participant.run_id


def model_run(store: ResultsStore, study: Study, model: str, right: set[str]) -> str:
    """A model's images-to-sides run on the study's problems, right on `right`'s."""
    design = study.design
    config = {
        "strategy": "images-to-sides", "dataset": "bongard-classic", "data_dir": design.data_dir,
        "dataset_options": design.options, "agents": {"reasoner": model}, "problems": list(design.problems),
    }  # fmt: skip
    run_id = store.create_run(config, "test")
    for problem in design.problems:
        key = f"bongard-classic/{problem}"
        expected = {ref: study.question(problem).panel(ref).side for ref in study.question(problem).tests}
        answer = Answer(
            strategy="images-to-sides", problem=key, text="...", sides=expected if problem in right else {},
            expected={"sides": expected}, correct=problem in right, parse_status="ok",
        )  # fmt: skip
        store.save_item(run_id, key, 0, answer, None)
    store.hold_run(run_id, len(design.problems))
    store.release_run(run_id, finished=True)
    return run_id


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    return ResultsStore(tmp_path / "home" / STORE_FILE)


def test_two_participants_and_two_models_compare_as_figure_4_with_hand_counts_and_statsmodels_kappa(
    store: ResultsStore, shared_data: Path, tmp_path: Path
) -> None:
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa
    from statsmodels.stats.proportion import proportion_confint

    study = images_to_sides_study(store, shared_data)
    participate(study, "p01", P01)
    participate(study, "p02", P02)
    participate(study, "p03", {"2"}, dont_know=frozenset(PROBLEMS) - {"2", "3"})  # tried 2 of 7: left out
    run_a = model_run(store, study, "scripted:model-a", MODEL_A)
    run_b = model_run(store, study, "scripted:model-b", MODEL_B)
    out = tmp_path / "report"
    shown = run_bongard("compare", "--study", "fig4", "--out", out, "--home", store.path.parent)
    assert shown.returncode == 0, shown.stderr
    assert "left out by the inclusion rule: p03 (tried 2 of 7, not more than 50%)" in shown.stdout

    solved = {row["solver"]: row for row in csv_rows(out / "study-solved.csv")}
    majority = {p for p in PROBLEMS if (p in P01) + (p in P02) > 1}  # more than half of two: both
    hand = {"p01": P01, "p02": P02, "people (majority vote)": majority}
    hand |= {f"scripted:model-a ({run_a[-6:]})": MODEL_A, f"scripted:model-b ({run_b[-6:]})": MODEL_B}
    assert {label: int(row["solved"]) for label, row in solved.items()} == {
        k: len(v) for k, v in hand.items()
    }
    for label, row in solved.items():
        low, high = proportion_confint(len(hand[label]), len(PROBLEMS), method="wilson")
        assert (float(row["low"]), float(row["high"])) == (round(low, 3), round(high, 3)), label
    people = solved["people (majority vote)"]
    assert (float(people["mean"]), int(people["least"]), int(people["most"])) == (4.5, 4, 5)

    categories = {row["category"]: row for row in csv_rows(out / "study-by-category.csv")}
    for category, row in categories.items():
        members = {p for p in PROBLEMS if wonderland_category("bongard-classic", p) == category}
        assert int(row["problems"]) == len(members)
        for label, problems in hand.items():
            assert int(row[label]) == len(members & problems), (category, label)
    assert sorted(categories) == ["concept", "number", "same", "size", "spatial"]

    only = {row["model"]: row for row in csv_rows(out / "study-one-side-only.csv")}
    assert only[f"scripted:model-a ({run_a[-6:]})"]["people only"] == "8"
    assert only[f"scripted:model-a ({run_a[-6:]})"]["model only"] == "3, 14"

    ratings = np.array([[int(p in P01), int(p in P02)] for p in PROBLEMS])
    expected = fleiss_kappa(aggregate_raters(ratings)[0])
    assert f"Fleiss' kappa, solved or not per problem): {expected:.3f}" in shown.stdout
    assert (out / "study-heat-map.png").stat().st_size > 1000
    assert "people (majority vote)" in (out / "study.md").read_text()


def csv_rows(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_free_form_answers_of_people_are_judged_offline_by_bongard_judge_and_read_against_an_expert(
    store: ResultsStore, shared_data: Path, tmp_path: Path
) -> None:
    pytest.importorskip("sentence_transformers")
    from datasets_io.catalog import open_dataset

    dataset = open_dataset("bongard-classic", shared_data, {})
    design = design_study(
        dataset, "bongard-classic", "direct", selection=["2", "3"], data_dir=str(shared_data)
    )
    StudyRecords(store).create("free", design.to_json())
    study = Study(store, "free")
    participant, _ = study.invite("p01")
    concept = dataset.problem("2").concept
    assert concept is not None
    for problem, given in (
        ("2", {"left": concept.left, "right": str(concept.right)}),
        ("3", {"left": "x", "right": "y"}),
    ):
        study.show(participant, problem)
        study.answer(participant, problem, given)
    judged = run_bongard("judge", participant.run_id, "--judges", "embedding", "--home", store.path.parent)
    assert judged.returncode == 0, judged.stderr
    assert "2 answers judged" in judged.stdout
    home = store.path.parent
    template = tmp_path / "verdicts.csv"
    third = dataset.problem("3").concept
    assert third is not None
    written = run_bongard("study", "review", "free", "--expert", "e1", "--template", template, "--home", home)
    assert written.returncode == 0, written.stderr
    rows = csv_rows(template)
    assert [(r["problem"], r["left concept"], r["verdict"]) for r in rows] == [
        ("bongard-classic/2", concept.left, ""), ("bongard-classic/3", third.left, ""),
    ]  # fmt: skip
    bad = template.read_text().replace(",\n", ",perhaps\n", 1)
    (tmp_path / "bad.csv").write_text(bad)
    refused = run_bongard(
        "study", "review", "free", "--expert", "e1", "--labels", tmp_path / "bad.csv", "--home", home
    )
    assert (
        refused.returncode != 0
        and "bad.csv, line 2: verdict 'perhaps' is neither ok nor wrong" in refused.stderr
    )
    filled = template.read_text().replace(",\n", ",ok\n", 1).replace(",\n", ",wrong\n", 1)
    template.write_text(filled)
    stored = run_bongard("study", "review", "free", "--expert", "e1", "--labels", template, "--home", home)
    assert stored.returncode == 0 and "stored 2 verdict(s) of e1" in stored.stdout, stored.stderr
    shown = run_bongard("compare", "--study", "free", "--out", tmp_path / "r", "--home", home)
    assert shown.returncode == 0, shown.stderr
    assert "judging vs expert e1: 2 of 2 answers agree (100%)" in shown.stdout
    solved = {row["solver"]: row["solved"] for row in csv_rows(tmp_path / "r" / "study-solved.csv")}
    assert solved["p01"] == "1"
    listed = json.loads(run_bongard("study", "show", "free", "--json", "--home", store.path.parent).stdout)
    assert listed["participants"] == [
        {"pseudonym": "p01", "run": participant.run_id, "answered": 2, "tried": 2, "counted": True}
    ]


def test_the_viewers_study_page_shows_figure_4_in_a_real_browser(
    store: ResultsStore, shared_data: Path, tmp_path: Path
) -> None:
    from tests.browser import CHROMIUM_ARGS, chromium_or_skip, screenshots, viewer_of

    executable = chromium_or_skip()
    from playwright.sync_api import expect, sync_playwright

    study = images_to_sides_study(store, shared_data)
    participate(study, "p01", P01)
    participate(study, "p02", P02)
    run_a = model_run(store, study, "scripted:model-a", MODEL_A)
    model_run(store, study, "scripted:model-b", MODEL_B)
    shots = screenshots(tmp_path)
    with viewer_of(store.path) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(base + "/")
            page.get_by_role("link", name="studies").click()
            page.get_by_role("link", name="fig4").click()
            expect(page.get_by_role("heading", name="Study fig4")).to_be_visible()
            rows = page.locator("table.study-solved tbody tr")
            expect(rows).to_have_count(5)
            people = rows.nth(2).inner_text()
            assert "people (majority vote)" in people and "4.5 (4-5)" in people
            assert "0.286 [0.082, 0.641]" in people  # 2 of 7, Wilson
            expect(page.locator("text=Fleiss' kappa")).to_contain_text("-0.556")
            page.wait_for_load_state("load")
            assert page.eval_on_selector("img.plot", "i => i.complete && i.naturalWidth > 300")
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            page.screenshot(path=str(shots / "study-page.png"), full_page=True)
            page.get_by_role("link", name=f"scripted:model-a ({run_a[-6:]})").click()
            expect(page).to_have_url(f"{base}/runs/{run_a}")
        finally:
            browser.close()
