"""Reports at scale: `compare`, `export`, `show` and the viewer's pages on a 5,000-problem run.

Run from the repository root: `python -m benchmarks.reports [--problems N] [--runs R]`. It writes a
Bongard-RWR+ dataset of N problems (folders layout, 14 small PNGs each) and a store holding one run
over all of them (image-to-side: one call each, sending the sheet and the test panel, stored through
the store's own API: what a finished
`bongard run` leaves) and, in a second store, R runs of 100 items each. Each command runs as its own
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
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from PIL import Image

from datasets_io.loaders.rwr_plus import SOURCE_PROBLEMS_PER_BLOCK
from datasets_io.records import Answer, CallTrace
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
        many = ResultsStore(root / "many" / STORE_FILE)
        for index in range(options.runs):
            stored_run(many, root / "data", 100, f"openai:model-{index % 5}")
        print(
            f"built in {time.perf_counter() - started:.1f} s: {options.problems} problems, 1 run; "
            f"{options.runs} runs of 100 items"
        )
        home = ["--home", str(root / "big")]
        print(f"launch to exit on the {options.problems}-item run (peak RSS):")
        wall, rss = launched([str(BONGARD), "compare", run_id, "--out", str(root / "report"), *home])
        print(line("compare", wall, 5.0, f"  {rss:5.0f} MiB (target 300 MiB)"))
        for fmt, images in (("json", "--images"), ("eval", "--images"), ("json", "--no-images"),
                            ("eval", "--no-images")):  # fmt: skip
            out = root / f"logs-{fmt}{images}"
            args = [str(BONGARD), "export", run_id, "--log-format", fmt, images, "--out", str(out)]
            wall, rss = launched([*args, *home])
            print(line(f"export --log-format {fmt} {images}", wall, 10.0, f"  {rss:5.0f} MiB"))
        wall, rss = launched([str(BONGARD), "show", run_id, *home])
        print(line("show (its first page of items)", wall, 1.5, f"  {rss:5.0f} MiB"))
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
