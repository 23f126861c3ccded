"""`bongard study invite | serve | forget`: participants answer a study's problems in a browser, each
answer kept as given and as an item of their `human:` run (issue 54)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphs.studies.design import design_study
from graphs.studies.participants import Study
from results.store import STORE_FILE, ResultsStore
from results.studies import StudyRecords
from tests.browser import (
    CHROMIUM_ARGS,
    chromium_or_skip,
    first_line_of,
    listening_addresses,
    screenshots,
    study_pages_of,
)
from tests.cli import BONGARD, run_bongard

pytest.importorskip("starlette")
pytest.importorskip("python_multipart")

TASKS = ("direct", "images-to-sides", "concept-selection", "concept-probe")
SCREENS = {"laptop": (1280, 800), "phone": (390, 844)}


def new_study(store: ResultsStore, data: Path, name: str, task: str, **choices: Any) -> Study:
    """A study of problems 2-4 of bongard-classic (its 6th panels held out as test images), problem 1
    explaining the task, sessions of two."""
    from datasets_io.catalog import open_dataset

    options = {"holdout_test": "true"}
    dataset = open_dataset("bongard-classic", data, options)
    design = design_study(
        dataset, "bongard-classic", task, selection=["1", "2", "3", "4"], instructions="1",
        session_size=2, data_dir=str(data), options=options, **choices,
    )  # fmt: skip
    StudyRecords(store).create(name, design.to_json())
    return Study(store, name)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultsStore]:
    opened = ResultsStore(tmp_path / STORE_FILE)
    yield opened
    opened.close()


def answer_in_browser(page: Any, task: str, problem: int) -> dict[str, Any]:
    """Type or click one answer on the page shown; what was entered, as the run should keep it."""
    if task == "direct":
        left, right = f"shapes of problem {problem} on the left", f"others, {problem}"
        page.get_by_label("Rule of the left side").fill(left)
        page.get_by_label("Rule of the right side").fill(right)
        page.get_by_role("button", name="Send answer").click()
        return {"left_rule": left, "right_rule": right}
    if task == "images-to-sides":
        page.get_by_role("group", name="Test image 1").get_by_label("Left").check()
        page.get_by_role("group", name="Test image 2").get_by_label("Right").check()
        page.get_by_role("button", name="Send answer").click()
        return {"sides": ["left", "right"]}
    if task == "concept-selection":
        page.locator("label.candidate").nth(1).click()
        page.get_by_role("button", name="Send answer").click()
        return {"candidate": 1}
    shown = page.locator("fieldset.panel").count()
    for place in range(shown):
        page.get_by_role("group", name=f"Image {place + 1}", exact=True).get_by_label(
            "1" if place % 2 else "2"
        ).check()
    page.get_by_role("button", name="Send answer").click()
    return {"concepts": [2 if place % 2 == 0 else 1 for place in range(shown)]}


def check_fits(page: Any, shots: Path, name: str) -> None:
    """Nothing wider than the screen: no sideways scrolling, the sheet and buttons inside it."""
    page.wait_for_load_state("load")
    assert page.eval_on_selector_all("img", "found => found.every(i => i.complete && i.naturalWidth > 0)")
    width = page.viewport_size["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width, name
    for selector in ("img.sheet", ".actions button", "fieldset"):
        for box in page.eval_on_selector_all(
            selector, "found => found.map(e => e.getBoundingClientRect().right)"
        ):
            assert box <= width, (name, selector, box)
    if page.viewport_size == {"width": 1280, "height": 800} and "probe" not in name:
        send = page.eval_on_selector(".actions button", "e => e.getBoundingClientRect().bottom")
        assert send <= 800, (name, send)  # the whole problem and its answer on one laptop screen
    page.screenshot(path=str(shots / f"study-{name}.png"), full_page=True)


@pytest.mark.parametrize("task", TASKS)
def test_in_a_real_browser_a_participant_answers_three_problems_closes_and_resumes_at_the_third(
    task: str, store: ResultsStore, shared_data: Path, tmp_path: Path
) -> None:
    executable = chromium_or_skip()
    from playwright.sync_api import expect, sync_playwright

    study = new_study(store, shared_data, task, task)
    participant, token = study.invite("p01")
    shots = screenshots(tmp_path)
    entered: dict[str, dict[str, Any]] = {}
    with study_pages_of(store, task) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{base}/p/{token}")
            expect(page.get_by_role("heading", name="How the study works")).to_be_visible()
            check_fits(page, shots, f"{task}-instructions-laptop")
            page.get_by_role("button", name="Begin the study").click()
            expect(page.locator("header")).to_contain_text("problem 1 of 2")
            check_fits(page, shots, f"{task}-laptop")
            entered["2"] = answer_in_browser(page, task, 2)
            expect(page.locator("header")).to_contain_text("problem 2 of 2")
            page.get_by_role("button", name="I don't know").click()  # problem 3
            entered["3"] = {"dont_know": True}
            expect(page.get_by_role("heading", name="Session 1 of 2 is done")).to_be_visible()
            browser.close()  # the participant closes the browser after the second problem

            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
            phone.goto(f"{base}/p/{token}")
            expect(phone.get_by_role("heading", name="Session 1 of 2 is done")).to_be_visible()
            phone.get_by_role("button", name="Start session 2").click()
            expect(phone.locator("header")).to_contain_text("Session 2 of 2 · problem 1 of 1")
            check_fits(phone, shots, f"{task}-phone")
            incomplete = phone.get_by_role("button", name="Send answer")
            if task == "direct":  # a half-filled answer is refused, and nothing kept
                phone.get_by_label("Rule of the left side").fill("half")
                phone.locator("input[name=right]").evaluate("e => e.removeAttribute('required')")
                incomplete.click()
                expect(phone.get_by_role("alert")).to_contain_text("write a rule for each side")
                assert "4" not in study.records.answers(task, "p01") or not _answered(study, "4")
            entered["4"] = answer_in_browser(phone, task, 4)
            expect(phone.get_by_role("heading", name="Thank you")).to_be_visible()
            check_fits(phone, shots, f"{task}-done-phone")
        finally:
            browser.close()

    stored = {
        problem.split("/")[1]: answer for problem, _, answer in store.answer_records(participant.run_id)
    }
    assert sorted(stored) == ["2", "3", "4"]
    summary = store.summary(participant.run_id)
    assert (summary.status, summary.cost_usd, summary.tokens) == ("complete", 0.0, 0)
    for problem, given in entered.items():
        answer = stored[problem]
        [call] = answer.trace
        assert call.agent == "human:p01" and call.latency_s > 0 and call.cost_usd == 0
        if given.get("dont_know"):
            assert answer.text == "I don't know." and answer.details["study"]["dont_know"] is True
            assert answer.correct in (None, False)
            continue
        question = study.question(problem)
        if task == "direct":
            assert (answer.left_rule, answer.right_rule) == (given["left_rule"], given["right_rule"])
        elif task == "images-to-sides":
            assert answer.sides == dict(zip(question.tests, given["sides"], strict=True))
            assert answer.correct == (answer.sides == answer.expected["sides"])
        elif task == "concept-selection":
            assert answer.label == question.candidates[given["candidate"]].label
            assert answer.correct == (answer.label == question.inputs["label"])
        else:
            chosen = {
                ref: ("left", "right")[c - 1]
                for ref, c in zip(question.shown_panels, given["concepts"], strict=True)
            }
            assert answer.sides == chosen


def _answered(study: Study, problem: str) -> bool:
    return study.records.answers(study.name, "p01")[problem].answered_at is not None


def test_a_participants_link_reads_and_writes_their_own_answers_only(
    store: ResultsStore, shared_data: Path
) -> None:
    from starlette.testclient import TestClient

    from graphs.studies.pages import create_app

    study = new_study(store, shared_data, "s", "direct")
    first, first_token = study.invite("p01")
    second, second_token = study.invite("p02")
    with TestClient(create_app(store, "s"), base_url="http://127.0.0.1") as client:
        for problem, answer in (("1", {}), ("2", {"left": "alpha-rule", "right": "beta-rule"})):
            client.get(f"/p/{first_token}")
            client.post(f"/p/{first_token}/answer", data={"problem": problem, **answer})
        assert "problem 2 of 2" in client.get(f"/p/{first_token}").text
        kept = study.records.answers("s", "p01")
        # the second participant starts at the beginning, and cannot answer the first's problems
        assert "How the study works" in client.get(f"/p/{second_token}").text
        client.post(f"/p/{second_token}/answer", data={"problem": "3", "left": "x", "right": "y"})
        assert study.records.answers("s", "p01") == kept and "3" not in study.records.answers("s", "p02")
        assert client.get(f"/p/{second_token}/image/0/2").status_code == 404  # not shown to them yet
        assert client.get(f"/p/{first_token}/image/0/2").headers["content-type"] == "image/png"
        assert "alpha-rule" not in client.get(f"/p/{second_token}").text
        for stranger in ("x" * 32, first_token[:-1], ""):
            assert client.get(f"/p/{stranger}").status_code == 404
            assert client.post(f"/p/{stranger}/answer", data={"problem": "3"}).status_code in (404, 405)
        new_token = study.new_link("p01")
        assert client.get(f"/p/{first_token}").status_code == 404  # the old link opens nothing
        assert "problem 2 of 2" in client.get(f"/p/{new_token}").text
        # an answer sent twice is kept once, as first given
        client.post(f"/p/{new_token}/answer", data={"problem": "3", "left": "c", "right": "d"})
        client.post(f"/p/{new_token}/answer", data={"problem": "3", "left": "e", "right": "f"})
        assert study.records.answers("s", "p01")["3"].answer == {"left": "c", "right": "d"}
        assert client.get(f"/p/{new_token}", headers={"host": "192.168.1.7"}).status_code == 400
    runs = {
        p: [a.text for _, _, a in store.answer_records(r)]
        for p, r in (("1", first.run_id), ("2", second.run_id))
    }
    assert runs == {"1": ["Left: alpha-rule\nRight: beta-rule", "Left: c\nRight: d"], "2": []}
    with TestClient(create_app(store, "s", lan=True), base_url="http://192.168.1.7") as client:
        assert client.get(f"/p/{new_token}").status_code == 200  # --lan answers the machine's LAN address


def test_the_store_keeps_only_a_hash_of_each_link_and_forget_deletes_the_participant(
    store: ResultsStore, shared_data: Path
) -> None:
    study = new_study(store, shared_data, "s", "direct")
    participant, token = study.invite("p01")
    study.show(participant, "1")
    study.answer(participant, "1", {})
    assert token.encode() not in store.path.read_bytes() + Path(f"{store.path}-wal").read_bytes()
    assert run_bongard("study", "forget", "s", "p01", "--home", store.path.parent).returncode == 0
    assert study.records.participants("s") == [] and study.records.answers("s", "p01") == {}
    assert participant.run_id not in store.run_ids()
    refused = run_bongard("study", "invite", "s", "Jane Doe", "--home", store.path.parent)
    assert refused.returncode != 0 and "pseudonym 'Jane Doe'" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_bongard_study_serve_listens_on_127_0_0_1_unless_told_lan(
    store: ResultsStore, shared_data: Path
) -> None:
    new_study(store, shared_data, "s", "images-to-sides")
    invited = run_bongard("study", "invite", "s", "p01", "--port", "0", "--home", store.path.parent)
    assert invited.returncode == 0, invited.stderr
    [token] = re.findall(r"http://127\.0\.0\.1:0/p/(\S+)", invited.stdout)
    for flags, addresses in (((), ["127.0.0.1"]), (("--lan",), ["0.0.0.0"])):
        serve = [str(BONGARD), "study", "serve", "s", "--port", "0", *flags, "--home", str(store.path.parent)]
        with first_line_of(serve) as (_, line):
            [port] = re.findall(r"http://[\d.]+:(\d+)/p/TOKEN", line)
            deadline = time.monotonic() + 30
            while not listening_addresses(int(port)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert listening_addresses(int(port)) == addresses
            page = httpx.get(f"http://127.0.0.1:{port}/p/{token}", timeout=60)
            assert page.status_code == 200 and "How the study works" in page.text
            assert "script-src" not in page.headers["content-security-policy"]
            assert page.headers["cache-control"] == "no-store"


def test_an_answer_after_the_time_limit_is_kept_as_given_and_counts_as_none(
    store: ResultsStore, shared_data: Path
) -> None:
    study = new_study(store, shared_data, "timed", "images-to-sides", time_limit_s=0.5)
    participant, _ = study.invite("p01")
    for problem, wait in (("1", 0.0), ("2", 0.7), ("3", 0.0)):
        study.show(participant, problem)
        time.sleep(wait)
        question = study.question(problem) if problem != "1" else None
        right = {ref: question.panel(ref).side for ref in question.tests} if question else {}
        assert study.answer(participant, problem, {"sides": right})
    kept = study.records.answers("timed", "p01")
    assert kept["2"].answer == {
        "sides": {ref: study.question("2").panel(ref).side for ref in study.question("2").tests}
    }
    assert kept["2"].seconds is not None and kept["2"].seconds >= 0.7
    items = {p.split("/")[1]: a for p, _, a in store.answer_records(participant.run_id)}
    assert items["2"].correct is False and items["2"].text == "No answer within the time limit."
    assert items["2"].details["study"] == {"dont_know": False, "over_time": True}
    assert items["3"].correct is True
    [standing] = study.standings()
    assert (standing.answered, standing.tried) == (2, 1)
