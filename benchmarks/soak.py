"""Soak: every strategy killed (SIGKILL) at random points and resumed until it finishes.

Run: `python -m benchmarks.soak [--problems 6] [--kills 3] [--seed 0] [--strategies a,b]`.

Each strategy runs as a real `bongard run` process over the classic problems
against the stand-in OpenAI server of `benchmarks.latency_server` (its own
process, fixed latency, minimal schema-valid replies, sampled so nothing is
served from the response cache). Every strategy is soaked:

- a strategy with an author role (concept-probe) gets the same stand-in as its
  `--author`;
- a second stage (a strategy that reuses an earlier run: `rules_from`,
  `descriptions_from`) first gets that earlier run, a whole unkilled run of the
  same strategy in the same workspace, and is then soaked with `-S OPTION=RUN`;
- the Bongard-RWR+ tasks (concept-selection, image-to-side) run over a small
  Bongard-RWR+ folder built in the temporary folder from the real Bongard-RWR
  photographs.

The process is killed at a random moment after its first call is answered (so
every kill lands in the work, however slow start-up is), resumed, killed
again, and so on, then resumed to the end.
Per strategy it prints:

- lost items: planned items not stored at the end (target 0);
- duplicate items: items stored beyond the planned ones, over every run in the
  workspace but a second stage's earlier one (a second run started instead of
  a resume counts here; target 0);
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
import csv
import json
import random
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from benchmarks.runs import BONGARD, LatencyServer, latency_server, model_spec
from datasets_io.catalog import default_data_dir
from graphs.registry import get_strategy
from graphs.runs.checkpoints import checkpointed_calls
from results.store import STORE_FILE, ResultsStore

RWR_PLUS = frozenset({"concept-selection", "image-to-side"})
"""The Bongard-RWR+ tasks, soaked on the folder `rwr_plus_folder` builds."""
STRATEGY_OPTIONS = {"concept-generation": ["-S", "input=descriptions"]}
"""Options without which a strategy has nothing to reuse (concept-generation describes panels,
and so can take an earlier run's descriptions, only with input=descriptions)."""
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


def run_args(
    server: LatencyServer,
    home: Path,
    strategy: str,
    problems: int,
    rwr_plus: Path,
    earlier: str | None = None,
) -> list[str]:
    """A fresh `bongard run`; `earlier`: the run a second stage reuses (its first `reuses` option)."""
    info = get_strategy(strategy)
    if strategy in RWR_PLUS:
        dataset = ["--dataset", f"bongard-rwr-plus:{rwr_plus}"]
    else:
        holdout = ["-O", "holdout_test=true"] if info.needs_test_panels else []
        dataset = ["--dataset", "bongard-classic", *holdout]
    options = list(STRATEGY_OPTIONS.get(strategy, []))
    if earlier is not None:
        options += ["-S", f"{next(iter(info.reuses))}={earlier}"]
    if "author" in info.roles:
        options += ["--author", model_spec(server)]
    return [
        str(BONGARD), "run", "--strategy", strategy, "--model", model_spec(server), *dataset,
        "--problems", f"1-{problems}", "--concurrency", "4", "--home", str(home),
        "-M", "temperature=0.7", *options,
    ]  # fmt: skip


def finish(args: list[str]) -> None:
    """Runs `bongard run` to the end, or stops the soak with the tail of what it said."""
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")


def second_stage(strategy: str) -> bool:
    """Whether the strategy is soaked as a second stage over an earlier run: it can reuse one,
    and has no author role (concept-probe's reused probes are its author's, who is soaked too)."""
    info = get_strategy(strategy)
    return bool(info.reuses) and "author" not in info.roles


def latest(home: Path, earlier: str | None = None) -> tuple[ResultsStore, str] | None:
    """The workspace's newest run other than the `earlier` one a second stage reuses."""
    path = home / STORE_FILE
    if not path.exists():
        return None
    store = ResultsStore(path)
    own = [run_id for run_id in store.run_ids() if run_id != earlier]
    return (store, own[-1]) if own else None


def stored_calls(home: Path, earlier: str | None) -> tuple[int, int, int]:
    """Planned items, items done and calls stored, of the workspace's only run (beside `earlier`)."""
    found = latest(home, earlier)
    assert found is not None, f"no run in {home}"
    store, run_id = found
    summary = store.summary(run_id)
    return summary.planned or summary.items, summary.done, summary.calls


def items_stored(home: Path, earlier: str | None) -> int:
    """Items stored in every run of the workspace but the `earlier` one."""
    found = latest(home, earlier)
    if found is None:
        return 0
    store = found[0]
    return sum(store.summary(run_id).items for run_id in store.run_ids() if run_id != earlier)


def rwr_plus_folder(target: Path) -> Path:
    """A Bongard-RWR+ dataset of the real Bongard-RWR photographs: its 60 problem folders
    (`<id>/left|right/0..6`, the side folders RWR+ writes) linked, not copied, and a `labels.csv`
    of the classic rules, which Bongard-RWR's problems express by number (row id - 1). All 60:
    concept-selection draws its distractors from every problem, sharing no word with the true one."""
    data = default_data_dir()
    rules = json.loads((data / "bongard-classic" / "bp_solutions.json").read_text(encoding="utf-8"))
    target.mkdir()
    for problem in (data / "bongard-rwr").iterdir():
        if problem.name.isdigit():
            (target / problem.name).symlink_to(problem.resolve(), target_is_directory=True)
    with (target / "labels.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Problem", "Left-side Rule", "Right-side Rule"])
        writer.writerows([number, *rules[str(number)]] for number in range(1, len(rules) + 1))
    return target


def earlier_run(server: LatencyServer, work: Path, strategy: str, problems: int, rwr_plus: Path) -> str:
    """A whole, unkilled run for a second stage to reuse, copied into the workspaces of its
    reference run and its soak; its id."""
    first = work / f"{strategy}-earlier"
    finish(run_args(server, first, strategy, problems, rwr_plus))
    found = latest(first)
    assert found is not None, f"no run in {first}"
    for home in (work / f"{strategy}-reference", work / strategy):
        shutil.copytree(first, home)
    return found[1]


def intact(home: Path) -> bool:
    files = [home / STORE_FILE, home / "checkpoints.sqlite", home / "cache.sqlite"]
    for path in (p for p in files if p.exists()):
        with sqlite3.connect(path) as db:
            if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                return False
    return True


def soak(
    server: LatencyServer,
    work: Path,
    strategy: str,
    problems: int,
    kills: int,
    rng: random.Random,
    rwr_plus: Path,
) -> Soak:
    earlier = earlier_run(server, work, strategy, problems, rwr_plus) if second_stage(strategy) else None
    reference, reference_from = work / f"{strategy}-reference", len(server.answered())
    finish(run_args(server, reference, strategy, problems, rwr_plus, earlier))
    _, _, reference_calls = stored_calls(reference, earlier)
    home = work / strategy
    answered_before = len(server.answered())
    kill_times: list[float] = []
    args = run_args(server, home, strategy, problems, rwr_plus, earlier)
    for _ in range(kills):
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        log_size = server.log.stat().st_size
        while child.poll() is None and server.log.stat().st_size == log_size:
            time.sleep(0.02)  # start-up takes 1 s to several on a busy machine: kill during the work
        time.sleep(rng.uniform(0, 1.0))
        finished = child.poll() is not None  # a fast strategy may be done before the kill
        if not finished:
            child.send_signal(signal.SIGKILL)
            child.wait()
            kill_times.append(time.time())
            time.sleep(0.5)  # what was in flight is answered, to nobody
        found = latest(home, earlier)
        args = [str(BONGARD), "run", "--resume", found[1], "--home", str(home)] if found else args
        if finished:
            break  # and the last step resumes it (nothing left), rather than starting a second run
    kept, answered_at_last_kill = kept_calls(home, strategy, earlier), len(server.answered())
    finish(args)
    planned, done, calls = stored_calls(home, earlier)
    answered = server.answered()
    sent_again = len(answered) - answered_at_last_kill - (calls - kept)
    uninterrupted = Counter(digest for digest, _ in answered[reference_from:answered_before])
    extra = repeats(answered[answered_before:], uninterrupted, kill_times)
    return Soak(
        strategy,
        len(kill_times),
        planned - done,
        items_stored(home, earlier) - planned,
        max(0, calls - reference_calls),
        extra["finished"],
        extra["in flight"],
        sent_again,
        intact(home),
    )


def kept_calls(home: Path, strategy: str, earlier: str | None) -> int:
    """Calls the run has kept: its stored items' and those in its unfinished items' checkpoints."""
    found = latest(home, earlier)
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
    return names


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", type=int, default=6)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=80)
    parser.add_argument("--strategies", help="comma-separated (default: every strategy)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(
        f"soak: {args.problems} problems per strategy (classic; Bongard-RWR for the RWR+ tasks), "
        f"up to {args.kills} SIGKILLs at random, stand-in latency {args.latency_ms:.0f} ms"
    )
    columns = ("strategy", "kills", "lost items", "duplicate items", "duplicate calls",
               "repeated finished calls", "repeated from flight", "kept calls sent again by the last resume",
               "SQLite intact")  # fmt: skip
    print("| " + " | ".join(columns) + " |\n" + "| --- " * len(columns) + "|")
    with tempfile.TemporaryDirectory() as folder, latency_server(args.latency_ms, Path(folder)) as server:
        rwr_plus = rwr_plus_folder(Path(folder) / "rwr-plus")
        for name in strategies(args.strategies):
            result = soak(server, Path(folder), name, args.problems, args.kills, rng, rwr_plus)
            intact_text = "yes" if result.intact else "NO"
            cells = (
                result.strategy,
                result.kills,
                result.lost,
                result.duplicate_items,
                result.duplicate_calls,
                result.repeated_finished,
                result.repeated_in_flight,
                result.kept_sent_again,
                intact_text,
            )
            print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
