"""First call after launch on a large dataset: a new workspace, a later run, and a resume.

Run from the repository root: `python -m benchmarks.first_call [--problems N]`. It writes a
Bongard-RWR+ dataset of N problems (as `benchmarks.reports`: folders layout, 14 small PNGs each),
starts the stand-in server of `benchmarks.latency_server` in its own process, and times from a
`bongard run` process's launch to the server's first answered request: in a workspace that has not
seen the dataset (its survey is made and kept), in the same workspace again (the kept survey is
used), and for `--resume` of a run stopped after a few hundred items. Each run is stopped once its
first call is answered, but the first one and the one to be resumed run on for a few hundred items
(the survey is kept beside the run, so a run stopped at once keeps none). Each round uses its own workspace;
the medians of the rounds are printed. The target is issues 34's and 53's 1.5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.reports import BONGARD, DATASET, write_dataset
from benchmarks.runs import LatencyServer, latency_server, model_spec

TARGET_S = 1.5
STOPPED_AFTER = 300
"""Items the run to be resumed finishes before it is stopped (half the problems where fewer)."""


def until_first_call(args: list[str], server: LatencyServer, stop_after: int = 1) -> float:
    """Seconds from launching `args` to the server's first answer to it; the process is stopped
    once `stop_after` answers have come."""
    before = len(server.answered())
    started = time.time()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while len(answered := server.answered()) < before + stop_after:
            if child.poll() is not None:
                raise SystemExit(f"{' '.join(args)} exited with {child.returncode} before its calls")
            time.sleep(0.01)
    finally:
        child.terminate()
        child.wait(timeout=60)
    return answered[before][1] - started


def _line(label: str, seconds: list[float]) -> str:
    middle = statistics.median(seconds)
    return (
        f"  {label:<44} {middle:5.2f} s  ratio {middle / TARGET_S:4.2f}"
        f"  (median of {len(seconds)}: {', '.join(f'{s:.2f}' for s in seconds)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the three launches (medians shown)")
    options = parser.parse_args()
    stopped_after = min(STOPPED_AFTER, options.problems // 2)
    labels = (
        "a workspace new to the dataset",
        "the same workspace again",
        f"--resume after {stopped_after} items",
    )
    timed: dict[str, list[float]] = {label: [] for label in labels}
    with tempfile.TemporaryDirectory(prefix="bongard-first-call-") as work:
        root = Path(work)
        write_dataset(root / "data", options.problems)
        with latency_server(5.0, root / "server") as server:
            for round_number in range(options.rounds):
                home = root / f"home-{round_number}"

                def run(*extra: str, home: Path = home) -> list[str]:
                    return [
                        str(BONGARD), "run", "--strategy", "image-to-side", "--model", model_spec(server),
                        "--dataset", DATASET, "--data-dir", str(root / "data"), "--home", str(home),
                        "--concurrency", "8", "-M", "cache=false", *extra,
                    ]  # fmt: skip

                # the first run goes on past its first call until its survey is kept (beside the run)
                timed[labels[0]].append(until_first_call(run(), server, stop_after=stopped_after))
                timed[labels[1]].append(until_first_call(run(), server))
                until_first_call(run(), server, stop_after=stopped_after)
                resumed = [str(BONGARD), "run", "--resume", "latest", "--home", str(home)]
                timed[labels[2]].append(until_first_call(resumed, server))
    print(
        f"first call after launch, {options.problems} problems (target {TARGET_S} s), "
        f"load average {os.getloadavg()[0]:.1f} at the end:"
    )
    for label, seconds in timed.items():
        print(_line(label, seconds))


if __name__ == "__main__":
    main()
