"""Soak: every strategy killed (SIGKILL) at random points and resumed until it finishes.

Run: `python -m benchmarks.soak [--problems 6] [--kills 3] [--seed 0] [--strategies a,b]`.

Each strategy runs as a real `bongard run` process over the classic problems
against the stand-in OpenAI server of `benchmarks.latency_server` (its own
process, fixed latency, minimal schema-valid replies, sampled so nothing is
served from the response cache). The process is killed at a random moment
after its first call is answered (so every kill lands in the work, however
slow start-up is), resumed, killed again, and so on, then resumed to the end.
Per strategy it prints:

- lost items: planned items not stored at the end (target 0);
- duplicate items: items stored beyond the planned ones, over every run in the
  workspace (a second run started instead of a resume counts here; target 0);
- duplicate calls: calls stored beyond those of an uninterrupted run of the
  same items (target 0);
- repeated finished calls: answers beyond an uninterrupted run's whose
  previous answer came more than `SAVE_LAG_S` before the kill of the process
  it went to (target 0: the README's promise);
- calls repeated from flight: the other answers beyond (in flight at a kill,
  or answered but not yet saved: expected; reported);
- kept calls sent again by the last resume, exactly: its requests beyond the
  calls the run had not kept (stored items and item checkpoints) at the last
  kill (target 0);
- whether every SQLite file (store, checkpoints, cache) passes its integrity check.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from benchmarks.runs import BONGARD, LatencyServer, latency_server, model_spec
from datasets_io.store import STORE_FILE, ResultsStore
from graphs.checkpoints import checkpointed_calls
from graphs.registry import get_strategy

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
SAVE_LAG_S = 1.0
"""How long after the server answered a call a killed client may not have saved it yet: up to
about 0.9 s was seen on a busy 2-core machine. A call answered longer before the kill had
returned; one answered since was in flight, as far as the client could know."""


@dataclass
class Soak:
    strategy: str
    kills: int
    lost: int
    duplicate_items: int
    duplicate_calls: int
    repeated_finished: int
    repeated_in_flight: int
    kept_sent_again: int
    intact: bool


def run_args(server: LatencyServer, home: Path, strategy: str, problems: int) -> list[str]:
    options = ["-O", "holdout_test=true"] if get_strategy(strategy).needs_test_panels else []
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


def items_stored(home: Path) -> int:
    """Items stored in every run of the workspace."""
    found = latest(home)
    return 0 if found is None else sum(found[0].summary(run_id).items for run_id in found[0].run_ids())


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
    reference, reference_from = work / f"{strategy}-reference", len(server.answered())
    subprocess.run(run_args(server, reference, strategy, problems), check=True, capture_output=True)
    _, _, reference_calls = stored_calls(reference)
    home = work / strategy
    answered_before = len(server.answered())
    kill_times: list[float] = []
    args = run_args(server, home, strategy, problems)
    for _ in range(kills):
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        log_size = server.log.stat().st_size
        while child.poll() is None and server.log.stat().st_size == log_size:
            time.sleep(0.02)  # start-up takes 1 s to several on a busy machine: kill during the work
        time.sleep(rng.uniform(0, 1.0))
        if child.poll() is not None:
            break
        child.send_signal(signal.SIGKILL)
        child.wait()
        kill_times.append(time.time())
        time.sleep(0.5)  # what was in flight is answered, to nobody
        found = latest(home)
        args = [str(BONGARD), "run", "--resume", found[1], "--home", str(home)] if found else args
    kept, answered_at_last_kill = kept_calls(home, strategy), len(server.answered())
    subprocess.run(args, check=True, capture_output=True)
    planned, done, calls = stored_calls(home)
    answered = server.answered()
    sent_again = len(answered) - answered_at_last_kill - (calls - kept)
    uninterrupted = Counter(digest for digest, _ in answered[reference_from:answered_before])
    extra = repeats(answered[answered_before:], uninterrupted, kill_times)
    return Soak(
        strategy, len(kill_times), planned - done, items_stored(home) - planned,
        max(0, calls - reference_calls), extra["finished"], extra["in flight"], sent_again, intact(home),
    )  # fmt: skip


def kept_calls(home: Path, strategy: str) -> int:
    """Calls the run has kept: its stored items' and those in its unfinished items' checkpoints."""
    found = latest(home)
    if found is None:
        return 0
    store, run_id = found
    stored = store.finished_items(run_id) | store.failed_items(run_id)
    return store.summary(run_id).calls + asyncio.run(checkpointed_calls(home, run_id, strategy, stored))


def repeats(answered: list[tuple[str, float]], reference: Counter[str], kills: list[float]) -> Counter[str]:
    """Answers beyond an uninterrupted run's (a request it sends twice, such as a panel the classic
    set repeats, counts twice there), each `finished` when the answer before it came more than
    `SAVE_LAG_S` before the kill that ended the process it went to, else `in flight`."""
    seen: defaultdict[str, list[float]] = defaultdict(list)
    found: Counter[str] = Counter()
    for digest, at in answered:
        earlier = seen[digest]
        if len(earlier) >= reference[digest]:
            kill = next((k for k in kills if k > earlier[-1]), None) if earlier else None
            finished = kill is not None and kill < at and kill - earlier[-1] > SAVE_LAG_S
            found["finished" if finished else "in flight"] += 1
        earlier.append(at)
    return found


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
    columns = ("strategy", "kills", "lost items", "duplicate items", "duplicate calls",
               "repeated finished calls", "repeated from flight", "kept calls sent again by the last resume",
               "SQLite intact")  # fmt: skip
    print("| " + " | ".join(columns) + " |\n" + "| --- " * len(columns) + "|")
    with tempfile.TemporaryDirectory() as folder, latency_server(args.latency_ms, Path(folder)) as server:
        for name in strategies(args.strategies):
            result = soak(server, Path(folder), name, args.problems, args.kills, rng)
            intact_text = "yes" if result.intact else "NO"
            cells = (result.strategy, result.kills, result.lost, result.duplicate_items,
                     result.duplicate_calls, result.repeated_finished, result.repeated_in_flight,
                     result.kept_sent_again, intact_text)  # fmt: skip
            print("| " + " | ".join(map(str, cells)) + " |", flush=True)
    for name, why in sorted(SKIPPED.items()):
        print(f"not soaked: {name} ({why})", file=sys.stderr)


if __name__ == "__main__":
    main()
