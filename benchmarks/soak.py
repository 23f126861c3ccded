"""Soak: every strategy killed (SIGKILL) at random points and resumed until it finishes.

Run: `python -m benchmarks.soak [--problems 6] [--kills 3] [--seed 0] [--strategies a,b]`.

Each strategy runs as a real `bongard run` process over the classic problems
against the stand-in OpenAI server of `benchmarks.latency_server` (its own
process, fixed latency, minimal schema-valid replies, sampled so nothing is
served from the response cache). The process is killed at a random moment,
resumed, killed again, and so on, then resumed to the end. Per strategy it
prints:

- lost items: planned items not stored at the end (target 0);
- duplicate calls: calls stored beyond those of an uninterrupted run of the
  same items (target 0);
- repeated finished calls: requests the server answered again although their
  first answer came well before a kill (target 0: the README's promise);
- calls repeated from flight: requests that were in flight at a kill and were
  sent again (expected; reported);
- whether every SQLite file (store, checkpoints, cache) passes its integrity check.
"""

from __future__ import annotations

import argparse
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchmarks.runs import BONGARD, KILL_MARGIN_S, LatencyServer, latency_server, model_spec
from datasets_io.store import STORE_FILE, ResultsStore

NEEDS_TEST_IMAGES = {"images-to-sides", "image-to-side", "description-to-side", "descriptions-to-sides"}
SKIPPED = {
    "concept-probe": "needs --author or published probes",
    "deductive-rule-learning": "a second stage over an earlier run's rules",
    "componential-analysis": "a second stage over an earlier run's descriptions",
    "description-to-side": "reasons over an earlier run's descriptions",
    "descriptions-to-sides": "reasons over an earlier run's descriptions",
    "concept-generation": "reasons over an earlier run's descriptions",
    "concept-selection": "needs concept groups (Bongard-RWR+)",
    "image-to-side": "a Bongard-RWR+ task: run by the rwr strategies' tests",
}
"""Strategies that need an earlier run or data beside them; the rest are soaked."""


@dataclass
class Soak:
    strategy: str
    kills: int
    lost: int
    duplicate_calls: int
    repeated_finished: int
    repeated_in_flight: int
    intact: bool


def run_args(server: LatencyServer, home: Path, strategy: str, problems: int) -> list[str]:
    options = ["-O", "holdout_test=true"] if strategy in NEEDS_TEST_IMAGES else []
    return [
        str(BONGARD), "run", "--strategy", strategy, "--model", model_spec(server), "--dataset",
        "bongard-classic", "--problems", f"1-{problems}", "--concurrency", "4", "--home", str(home),
        "-M", "temperature=0.7", *options,
    ]  # fmt: skip


def latest(home: Path) -> tuple[ResultsStore, str] | None:
    path = home / STORE_FILE
    if not path.exists():
        return None
    store = ResultsStore(path)
    return (store, store.resolve_run("latest")) if store.run_ids() else None


def stored_calls(home: Path) -> tuple[int, int, int]:
    """Planned items, items done and calls stored, of the workspace's only run."""
    found = latest(home)
    assert found is not None, f"no run in {home}"
    store, run_id = found
    summary = store.summary(run_id)
    return summary.planned or summary.items, summary.done, summary.calls


def intact(home: Path) -> bool:
    files = [home / STORE_FILE, home / "checkpoints.sqlite", home / "cache.sqlite"]
    for path in (p for p in files if p.exists()):
        with sqlite3.connect(path) as db:
            if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                return False
    return True


def soak(
    server: LatencyServer, work: Path, strategy: str, problems: int, kills: int, rng: random.Random
) -> Soak:
    reference = work / f"{strategy}-reference"
    subprocess.run(run_args(server, reference, strategy, problems), check=True, capture_output=True)
    _, _, reference_calls = stored_calls(reference)
    home = work / strategy
    answered_before = len(server.answered())
    kill_times: list[float] = []
    args = run_args(server, home, strategy, problems)
    for _ in range(kills):
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.8, 2.5))  # start-up is about 1 s: kill during the work, not before
        if child.poll() is not None:
            break
        child.send_signal(signal.SIGKILL)
        child.wait()
        kill_times.append(time.time())
        time.sleep(0.5)  # what was in flight is answered, to nobody
        found = latest(home)
        args = [str(BONGARD), "run", "--resume", found[1], "--home", str(home)] if found else args
    subprocess.run(args, check=True, capture_output=True)
    planned, done, calls = stored_calls(home)
    answered = server.answered()[answered_before:]
    first_answer: dict[str, float] = {}
    repeats: Counter[str] = Counter()
    for digest, at in answered:
        if digest in first_answer:
            before_kill = any(first_answer[digest] < kill - KILL_MARGIN_S < at for kill in kill_times)
            repeats["finished" if before_kill else "in flight"] += 1
        else:
            first_answer[digest] = at
    return Soak(
        strategy, len(kill_times), planned - done, max(0, calls - reference_calls),
        repeats["finished"], repeats["in flight"], intact(home),
    )  # fmt: skip


def strategies(chosen: str | None) -> list[str]:
    if chosen:
        return chosen.split(",")
    listing = subprocess.run(
        [str(BONGARD), "strategies", "--markdown"], check=True, capture_output=True, text=True
    )
    names = [line.split("|")[1].strip(" `") for line in listing.stdout.splitlines() if line.startswith("| `")]
    return [name for name in names if name not in SKIPPED]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", type=int, default=6)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=80)
    parser.add_argument("--strategies", help="comma-separated (default: every strategy that runs alone)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"soak: {args.problems} classic problems per strategy, up to {args.kills} SIGKILLs at random, "
          f"stand-in latency {args.latency_ms:.0f} ms")  # fmt: skip
    columns = ("strategy", "kills", "lost items", "duplicate calls", "repeated finished calls",
               "repeated from flight", "SQLite intact")  # fmt: skip
    print("| " + " | ".join(columns) + " |\n" + "| --- " * len(columns) + "|")
    with tempfile.TemporaryDirectory() as folder, latency_server(args.latency_ms, Path(folder)) as server:
        for name in strategies(args.strategies):
            result = soak(server, Path(folder), name, args.problems, args.kills, rng)
            intact_text = "yes" if result.intact else "NO"
            cells = (result.strategy, result.kills, result.lost, result.duplicate_calls,
                     result.repeated_finished, result.repeated_in_flight, intact_text)  # fmt: skip
            print("| " + " | ".join(map(str, cells)) + " |", flush=True)
    for name, why in sorted(SKIPPED.items()):
        print(f"not soaked: {name} ({why})", file=sys.stderr)


if __name__ == "__main__":
    main()
