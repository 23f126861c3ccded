"""Reports at scale: `compare`, `export`, `show` and the viewer's pages on 5,000-problem runs.

Run from the repository root: `python -m benchmarks.reports [--problems N] [--runs R]`. It writes a
Bongard-RWR+ dataset of N problems (folders layout, 14 small PNGs each) and three stores, each
written through the store's own API (what a finished `bongard run` leaves):
- one-call: a run over all N problems of image-to-side, one short call each (the sheet and the
  test panel);
- descriptive: a judged run over all N problems of `descriptive`, shaped like a real one: 13 calls
  an item (12 panel descriptions, then the answer over them), each prompt the strategy's own
  template filled as the run fills it, replies as long as a GPT-4o-class model writes them, three
  judges' verdicts on each answer;
- attempts: the descriptive run over N/5 problems with three attempts each;
and, in a fourth store, R runs of 100 items each. Each command runs as its own
process, launch to exit, with its peak RSS from the kernel's account of the reaped child; the viewer's
first loads are measured in a fresh process too, so its imports count as a reader's first click pays
them; the runs page is also fetched from a real `bongard view` (which reads its libraries and rows
once its URL is printed), asked for at once and 1 s later. Each figure is printed beside issue 34's
target, with the ratio figure / target (under 1 holds). None gates CI: wall times move with the
machine's load.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from agents.prompt_library import PromptLibrary
from datasets_io.catalog import open_dataset
from datasets_io.loaders.rwr_plus import SOURCE_PROBLEMS_PER_BLOCK
from datasets_io.records import Answer, CallTrace, Verdict
from datasets_io.survey_cache import SURVEYS, cached_survey
from graphs.nodes import CASE_STUDY
from results.store import STORE_FILE, ResultsStore

BONGARD = Path(sys.executable).with_name("bongard")
DATASET = "bongard-rwr-plus"
PANELS = 7
"""Per side: six context panels and the test panel (the folders layout's last image)."""
SHEET = [f"{side}-{index}" for side in ("left", "right") for index in range(PANELS - 1)]
"""The panels of the sheet each call sends, beside its test panel, as image-to-side sends them."""
VIEWER_SCRIPT = """
import sys, time
from pathlib import Path
started = time.perf_counter()
from starlette.testclient import TestClient
from graphs.view.app import create_app
with TestClient(create_app(Path(sys.argv[1])), base_url="http://127.0.0.1") as client:
    before = time.perf_counter()
    assert client.get(sys.argv[2]).status_code == 200
    first = time.perf_counter() - before
    before = time.perf_counter()
    client.get(sys.argv[2])
    print(first, time.perf_counter() - before, before - started - first)
"""


def write_dataset(root: Path, problems: int) -> None:
    """`root/bongard-rwr-plus/<id>/{left,right}/0..6.png` and its `labels.csv`."""
    folder = root / DATASET
    images = [Image.new("L", (8, 8), shade) for shade in (40, 200)]
    for number in range(1, problems + 1):
        for side, image in zip(("left", "right"), images, strict=True):
            (folder / str(number) / side).mkdir(parents=True, exist_ok=True)
            for index in range(PANELS):
                image.save(folder / str(number) / side / f"{index}.png")
    with (folder / "labels.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Problem", "Left-side Rule", "Right-side Rule"])
        writer.writerows([str(n), f"rule {n}", f"not rule {n}"] for n in range(1, 1000))


def stored_run(store: ResultsStore, data: Path, problems: int, model: str) -> str:
    """A finished image-to-side run over problems 1..N, every other one solved."""
    config = {
        "strategy": "image-to-side", "dataset": DATASET, "data_dir": str(data), "agents": {"reasoner": model},
        "strategy_options": {},
    }  # fmt: skip
    run_id = store.create_run(config, "benchmark")
    truth = {"left-test-6": "left"}
    for number in range(1, problems + 1):
        if number % SOURCE_PROBLEMS_PER_BLOCK == 0:
            continue  # labels.csv has no row for it: a real run's survey skips it
        key = f"{DATASET}/{number}"
        side = "left" if number % 2 else "right"
        call = CallTrace(
            role="reasoner",
            agent=model,
            task="classify",
            conversation="c",
            step=0,
            images=[SHEET, ["left-test-6"]],
            prompt="Which side?",
            reply=side,
            input_tokens=900,
            output_tokens=5,
        )
        answer = Answer(
            strategy="image-to-side",
            problem=key,
            text=side,
            sides={"left-test-6": side},
            expected={"sides": truth},
            correct=side == "left",
            trace=[call],
        )
        store.save_item(run_id, key, 0, answer, None)
    store.release_run(run_id, finished=True)
    return run_id


DESCRIBED = (
    "a {size} {shape} drawn in {stroke} outline",
    "{count} small {shape}s scattered near the {place}",
    "one {shape} inside a larger {other}, both {fill}",
    "a {stroke} curve that does not close, ending near the {place}",
    "{count} {fill} {shape}s in a row along the {place}",
)
WORDS = {
    "size": ("small", "large", "medium-sized", "tiny"),
    "shape": ("circle", "triangle", "square", "hexagon", "ellipse"),
    "other": ("circle", "triangle", "square"),
    "stroke": ("thin", "thick", "dashed"),
    "place": ("top edge", "bottom left", "centre", "right edge"),
    "count": ("two", "three", "four", "five"),
    "fill": ("filled black", "left white", "hatched"),
}
DESCRIBE_TOKENS = (540, 120)
"""Input (the prompt's text and one panel image) and output tokens of a describe call, as GPT-4o
counts them for a 512-pixel panel and a paragraph."""
ANSWER_TOKENS = (2100, 70)
GPT_4O_PRICE = (2.5e-6, 10e-6)
"""US dollars per input and output token."""
JUDGES = ("openai:gpt-4o", "anthropic:claude-sonnet-4-5", "gemini:gemini-2.5-flash")


def description(chance: random.Random) -> str:
    """A panel's description as long as a GPT-4o-class model writes one (about 500 characters)."""
    sentences: list[str] = []
    while sum(map(len, sentences)) < 480:
        pattern = chance.choice(DESCRIBED)
        filled = pattern.format(**{key: chance.choice(values) for key, values in WORDS.items()})
        sentences.append(filled[0].upper() + filled[1:] + ".")
    return " ".join(sentences)


def _call(role: str, task: str, conversation: str, images: list[list[str]], prompt: str, reply: str,
          tokens: tuple[int, int]) -> CallTrace:  # fmt: skip
    cost = tokens[0] * GPT_4O_PRICE[0] + tokens[1] * GPT_4O_PRICE[1]
    return CallTrace(
        role=role, agent="openai:gpt-4o", task=task, conversation=conversation, step=0, images=images,
        prompt=prompt, reply=reply, input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=cost,
        latency_s=2.5,
    )  # fmt: skip


def descriptive_run(store: ResultsStore, data: Path, problems: int, attempts: int) -> str:
    """A finished, judged `descriptive` run over problems 1..N: each item's 12 describe calls and its
    answer call, with the prompts the strategy fills and replies of real length; every other answer
    judged right by two of three judges."""
    config = {
        "strategy": "descriptive", "dataset": DATASET, "data_dir": str(data), "attempts": attempts,
        "agents": {"describer": "openai:gpt-4o", "reasoner": "openai:gpt-4o"}, "strategy_options": {},
    }  # fmt: skip
    run_id = store.create_run(config, "benchmark")
    prompts = PromptLibrary()
    intro = prompts.fill(CASE_STUDY, "intro", panels_per_side=PANELS - 1)
    describe = intro + "\n\n" + prompts.fill(CASE_STUDY, "describe_panel")
    chance = random.Random(0)
    judging = f"strict|{','.join(JUDGES)}"
    for number in range(1, problems + 1):
        if number % SOURCE_PROBLEMS_PER_BLOCK == 0:
            continue
        key = f"{DATASET}/{number}"
        for attempt in range(attempts):
            written = {panel: description(chance) for panel in SHEET}
            calls = [
                _call("describer", "describe", f"panel {panel}", [[panel]], describe, text, DESCRIBE_TOKENS)
                for panel, text in written.items()
            ]
            listing = {
                side: "\n".join(f"{n}. {written[f'{side}-{n - 1}']}" for n in range(1, PANELS))
                for side in ("left", "right")
            }
            left, right = f"every figure is {chance.choice(WORDS['size'])}", f"no figure is {number % 7} wide"
            reply = f"Left: {left}\nRight: {right}"
            answer_prompt = intro + "\n\n" + prompts.fill(CASE_STUDY, "answer_from_descriptions", **listing)
            calls.append(_call("reasoner", "answer", "answer", [], answer_prompt, reply, ANSWER_TOKENS))
            answer = Answer(
                strategy="descriptive", problem=key, text=reply, left_rule=left, right_rule=right, trace=calls
            )
            store.save_item(run_id, key, attempt, answer, None)
            right_answer = number % 2 == 1
            verdicts = [
                Verdict(judge=judge, label="ok" if right_answer == (n < 2) else "wrong", raw_text="OK",
                        prompt=answer_prompt[:600], input_tokens=400, output_tokens=3, cost_usd=0.001)
                for n, judge in enumerate(JUDGES)
            ]  # fmt: skip
            store.save_judging(run_id, key, attempt, judging, "vote:2", right_answer, verdicts)
    store.release_run(run_id, finished=True)
    return run_id


def launched(args: list[str]) -> tuple[float, float]:
    """Wall seconds from launch to exit and peak RSS in MiB of one child process."""
    started = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed: {child.stderr.read().decode() if child.stderr else ''}")
    return wall, usage.ru_maxrss / 1024


def viewer_load(store: Path, path: str) -> tuple[float, float, float]:
    """First load, second load, and the viewer's own start-up, in seconds, in a fresh process."""
    printed = subprocess.run(
        [sys.executable, "-c", VIEWER_SCRIPT, str(store), path], check=True, capture_output=True, text=True
    ).stdout.split()
    first, again, start = (float(value) for value in printed)
    return first, again, start


SERVED_LOADS = 3
"""`bongard view` processes the runs page is fetched from at each pause: one fetch moved threefold
between runs minutes apart on this shared machine."""


def served_load(home: Path, path: str, pause: float) -> float:
    """Seconds to fetch `path` from a real `bongard view` process, asked `pause` s after it prints
    its URL (the viewer reads its libraries and every run's row in that time, as a reader's first
    click leaves it)."""
    viewer = subprocess.Popen(
        [str(BONGARD), "view", "--port", "0", "--home", str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert viewer.stdout is not None
        found = None
        while found is None:
            printed = viewer.stdout.readline()
            if not printed:
                raise SystemExit("bongard view exited before printing its URL")
            found = re.search(r"http://127\.0\.0\.1:\d+/", printed)
        time.sleep(pause)
        started = time.perf_counter()
        with urllib.request.urlopen(found.group().rstrip("/") + path) as page:
            page.read()
        return time.perf_counter() - started
    finally:
        viewer.send_signal(signal.SIGINT)
        viewer.wait()


def line(label: str, seconds: float, target: float, extra: str = "") -> str:
    return f"  {label:<44} {seconds:6.2f} s  target {target:4.1f} s  ratio {seconds / target:4.2f}{extra}"


@dataclass(frozen=True)
class Targets:
    """What a store's commands should stay under: issue 34's for the one-call store, issue 53's for
    the stores shaped like real runs (seconds, and MiB where one is set)."""

    show: float
    show_mib: float | None
    export: float
    export_mib: float | None
    compare: float = 5.0
    compare_mib: float = 300.0


ONE_CALL = Targets(show=1.5, show_mib=None, export=10.0, export_mib=None)
REAL_SHAPED = Targets(show=1.0, show_mib=250.0, export=10.0, export_mib=500.0)


def mib(rss: float, target: float | None) -> str:
    return f"  {rss:5.0f} MiB" + (f" (target {target:.0f}, ratio {rss / target:4.2f})" if target else "")


def measure(store: str, home: Path, run_id: str, targets: Targets, out: Path) -> None:
    """Launch to exit and peak RSS of `compare`, `export` (each format, with and without images) and
    `show` on one store's run."""
    where = ["--home", str(home)]
    print(f"{store} (launch to exit, peak RSS):")
    wall, rss = launched([str(BONGARD), "compare", run_id, "--out", str(out / "report"), *where])
    print(line("compare", wall, targets.compare, mib(rss, targets.compare_mib)))
    for fmt, images in (("json", "--images"), ("eval", "--images"), ("json", "--no-images"),
                        ("eval", "--no-images")):  # fmt: skip
        logs = out / f"logs-{fmt}{images}"
        args = [str(BONGARD), "export", run_id, "--log-format", fmt, images, "--out", str(logs)]
        wall, rss = launched([*args, *where])
        print(line(f"export --log-format {fmt} {images}", wall, targets.export, mib(rss, targets.export_mib)))
    wall, rss = launched([str(BONGARD), "show", run_id, *where])
    print(line("show (its first page of items)", wall, targets.show, mib(rss, targets.show_mib)))


def keep_survey(home: Path, data: Path) -> None:
    """The dataset's survey kept in the workspace, as a finished `bongard run` leaves it."""
    dataset = open_dataset(DATASET, data)
    cached_survey(dataset, home / SURVEYS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=50, help="runs in the store the runs page shows")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bongard-reports-") as work:
        root = Path(work)
        started = time.perf_counter()
        write_dataset(root / "data", options.problems)
        big = ResultsStore(root / "big" / STORE_FILE)
        run_id = stored_run(big, root / "data", options.problems, "openai:gpt-4o")
        described = descriptive_run(
            ResultsStore(root / "descriptive" / STORE_FILE), root / "data", options.problems, attempts=1
        )
        attempted = descriptive_run(
            ResultsStore(root / "attempts" / STORE_FILE), root / "data", options.problems // 5, attempts=3
        )
        for home in ("big", "descriptive", "attempts"):
            keep_survey(root / home, root / "data")
        many = ResultsStore(root / "many" / STORE_FILE)
        for index in range(options.runs):
            stored_run(many, root / "data", 100, f"openai:model-{index % 5}")
        print(
            f"built in {time.perf_counter() - started:.1f} s: {options.problems} problems; runs of one call "
            f"an item, of 13 (descriptive) and of 13 x 3 attempts over {options.problems // 5}; "
            f"{options.runs} runs of 100 items; load {os.getloadavg()[0]:.2f}"
        )
        measure(f"one call an item, {options.problems} items", root / "big", run_id, ONE_CALL, root / "one")
        measure(
            f"descriptive, 13 calls an item, {options.problems} items",
            root / "descriptive",
            described,
            REAL_SHAPED,
            root / "desc",
        )
        measure(
            f"descriptive, 3 attempts over {options.problems // 5} problems",
            root / "attempts",
            attempted,
            REAL_SHAPED,
            root / "att",
        )
        print("the viewer, first load in a fresh process (second load; the viewer's start-up apart):")
        first, again, start = viewer_load(root / "big" / STORE_FILE, f"/compare?runs={run_id}")
        print(
            line(
                f"compare page, {options.problems} problems",
                first,
                2.0,
                f"  (again {again:.3f} s; start {start:.2f} s)",
            )
        )
        for page, path in (
            ("compare page", f"/compare?runs={described}"),
            ("run page", f"/runs/{described}"),
            ("problem page", f"/runs/{described}/{DATASET}/1"),
        ):
            first, again, start = viewer_load(root / "descriptive" / STORE_FILE, path)
            print(
                line(
                    f"{page}, descriptive, {options.problems} items",
                    first,
                    2.0,
                    f"  (again {again:.3f} s; start {start:.2f} s)",
                )
            )
        first, again, start = viewer_load(root / "many" / STORE_FILE, "/")
        print(
            line(
                f"runs page, {options.runs} runs", first, 0.3, f"  (again {again:.3f} s; start {start:.2f} s)"
            )
        )
        print(
            "the runs page from `bongard view` itself, asked for as its URL is printed and 1 s later "
            f"(the median of {SERVED_LOADS} viewers, the slowest in brackets):"
        )
        for pause in (0.0, 1.0):
            loads = [served_load(root / "many", "/", pause) for _ in range(SERVED_LOADS)]
            extra = f"  (slowest {max(loads):.2f} s)"
            print(
                line(
                    f"runs page, {options.runs} runs, asked {pause:.0f} s after",
                    statistics.median(loads),
                    0.3,
                    extra,
                )
            )


if __name__ == "__main__":
    main()
