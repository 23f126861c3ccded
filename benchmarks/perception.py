"""The offline perception agent on the classic problems, and on fresh problems its design never saw.

Run from the repository root: `python -m benchmarks.perception [--data-dir DIR]`, or
`python -m benchmarks.perception --fresh N --seed S` for N Bongard-LOGO free-form problems generated
now (`datasets_io.generation.logo_generation`; kept in `--fresh-dir`, so a second run only perceives them).
The agent's design was tuned while looking at classic problems 1-100, so those figures say how well
it fits them, not what a new problem can expect: the fresh figure does, and a change to the agent is
judged on a seed chosen after the change.
Every panel is perceived once; the decisions are the agent's own
(`agents.perception.separability`), on the panels' feature rows.

- official split: panels 5 and 11 held out as the test pair, as `bongard run`
  does: images-to-sides (both tests on their sides, one decided with the other)
  and image-to-side (each test decided alone);
- 36-split mean: the same over all 36 ways of holding out one left and one right
  panel (the official split is one of 36);
- random sides: the 12 panels of each problem dealt at random into two sides of
  six, then the 36 splits; about 50 says nothing leaks from the held-out panels;
- sharpness: the agent's one global setting, chosen on the odd problems by their
  36-split mean and reported on the even ones;
- per problem: the official pair, and the 36-split share solved.
Two tests are shown in a seeded order, as the strategy shows them. On fresh problems (7 panels a
side) the official pair is image 6 of each side, as `bongard run` holds it out, and the split mean
runs over the 49 ways of holding out one left and one right image.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.perception.features import perceive
from agents.perception.rules import Row, Side
from agents.perception.separability import SHARPNESS, pair_sides, single_side
from agents.perception.table import panel_row
from datasets_io.catalog import Dataset, default_data_dir, open_dataset
from datasets_io.workspace import workspace_home
from results.intervals import wilson

OFFICIAL = (5, 5)
"""Held out in `bongard run`: the 6th panel of each side (panels 5 and 11)."""
SHARPNESS_GRID = (4, 8, 16, 32, 64)
RANDOM_DEALS = 5


@dataclass(frozen=True)
class Problem:
    number: str
    left: tuple[Row, ...]
    right: tuple[Row, ...]


@dataclass(frozen=True)
class Score:
    pairs: float
    """Share of held-out pairs with both tests on their sides."""
    images: float
    """Share of held-out tests put on their side when decided alone."""


def held_out(problem: Problem, i: int, j: int, sharpness: float) -> tuple[bool, int]:
    """Holding out left panel i and right panel j: the pair solved, and how many tests alone were right."""
    left = [row for k, row in enumerate(problem.left) if k != i]
    right = [row for k, row in enumerate(problem.right) if k != j]
    tests: list[tuple[Side, Row]] = [("left", problem.left[i]), ("right", problem.right[j])]
    random.Random(f"{problem.number}:{i}:{j}").shuffle(tests)
    (first_side, first), (second_side, second) = tests
    decided = pair_sides(left, right, first, second, sharpness).sides
    alone = sum(single_side(left, right, row, sharpness).sides[0] == side for side, row in tests)
    return decided == (first_side, second_side), alone


def score(problems: Sequence[Problem], sharpness: float, splits: Sequence[tuple[int, int]]) -> list[Score]:
    """Per problem, the share of `splits` solved as a pair and of tests placed alone."""
    found = []
    for problem in problems:
        results = [held_out(problem, i, j, sharpness) for i, j in splits]
        pairs = sum(solved for solved, _ in results) / len(results)
        found.append(Score(pairs, sum(alone for _, alone in results) / (2 * len(results))))
    return found


def mean(scores: Sequence[Score]) -> Score:
    return Score(
        100 * sum(s.pairs for s in scores) / len(scores), 100 * sum(s.images for s in scores) / len(scores)
    )


def dealt_at_random(problem: Problem, seed: int) -> Problem:
    """The problem with its 12 panels dealt at random into two sides of six."""
    panels = [*problem.left, *problem.right]
    random.Random(f"deal:{seed}:{problem.number}").shuffle(panels)
    return Problem(problem.number, tuple(panels[:6]), tuple(panels[6:]))


def load(data_dir: Path) -> list[Problem]:
    return perceived(open_dataset("bongard-classic", data_dir, {}))


def load_fresh(folder: Path, count: int, seed: int) -> list[Problem]:
    """`count` free-form problems generated from `seed` into `folder` (kept: generated once), each
    side's 7 images in order, the last being the one `bongard run` holds out."""
    from datasets_io.generation.logo_generation import generate

    generate(folder, count, seed)
    return perceived(open_dataset(f"bongard-logo:{folder}", None, {}))


def perceived(dataset: Dataset) -> list[Problem]:
    """Every problem's panels as the agent's feature rows: each side's context panels, then its test
    panels (none for the classic problems read whole)."""
    problems = []
    for number in dataset.problem_ids():
        problem = dataset.problem(number)
        rows = {
            side: tuple(
                panel_row(perceive(p.path))
                for p in [*getattr(problem, side), *getattr(problem, f"test_{side}")]
            )
            for side in ("left", "right")
        }
        problems.append(Problem(number, rows["left"], rows["right"]))
    return problems


def report_fresh(count: int, seed: int, folder: Path) -> None:
    """The figure a new problem can expect: fresh problems, with n and a 95% interval."""
    started = time.perf_counter()
    problems = load_fresh(folder, count, seed)
    last = len(problems[0].left) - 1
    official = score(problems, SHARPNESS, [(last, last)])
    solved = round(sum(s.pairs for s in official))
    placed = sum(round(2 * s.images) for s in official)
    every = [(i, j) for i in range(last + 1) for j in range(last + 1)]
    splits = score(problems, SHARPNESS, every)
    split = mean(splits)
    spread = statistics.stdev(100 * s.pairs for s in splits) / len(splits) ** 0.5 if len(splits) > 1 else 0.0
    print(
        f"The perception agent on {len(problems)} fresh Bongard-LOGO free-form problems (seed {seed}, "
        f"{folder}), sharpness {SHARPNESS}"
    )
    low, high = wilson(solved, len(problems))
    interval = f"[{100 * (low or 0):.1f}, {100 * (high or 0):.1f}]"
    normal = f"[{split.pairs - 1.96 * spread:.1f}, {split.pairs + 1.96 * spread:.1f}]"
    line("", "images-to-sides", "image-to-side")
    line(
        "held-out pair (image 6 of each side)",
        f"{solved} / {len(problems)}",
        f"{placed} / {2 * len(problems)}",
        f"  pairs {100 * solved / len(problems):.1f}% {interval} (Wilson)",
    )
    line(
        f"{len(every)}-split mean",
        f"{split.pairs:.1f}%",
        f"{split.images:.1f}%",
        f"  pairs {normal} (normal, over problems)",
    )
    print(f"chance is 50%; ({time.perf_counter() - started:.0f} s)")


def line(label: str, pairs: str, images: str, note: str = "") -> None:
    print(f"{label:36} {pairs:>16} {images:>16}{note}")


def report_sharpness(problems: Sequence[Problem], every: Sequence[tuple[int, int]]) -> None:
    """The global setting chosen on the odd problems, and what it gives on the even ones."""
    odd = [p for p in problems if int(p.number) % 2]
    even = [p for p in problems if not int(p.number) % 2]
    tried = {sharpness: mean(score(odd, sharpness, every)).pairs for sharpness in SHARPNESS_GRID}
    chosen = max(tried, key=lambda sharpness: tried[sharpness])
    on_even = mean(score(even, chosen, every)).pairs
    print(
        "sharpness on the odd problems (36-split mean): "
        + ", ".join(f"{s}: {v:.1f}" for s, v in tried.items())
    )
    agent = "" if chosen == SHARPNESS else f"; the agent uses {SHARPNESS}"
    print(f"  chosen {chosen}; on the even problems {on_even:.1f}%{agent}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--fresh", type=int, metavar="N", help="Measure on N freshly generated problems.")
    parser.add_argument("--seed", type=int, default=0, help="With --fresh: the generator's seed.")
    parser.add_argument("--fresh-dir", type=Path, help="With --fresh: where the problems are kept.")
    args = parser.parse_args()
    if args.fresh is not None:
        folder = args.fresh_dir or workspace_home(None) / "fresh-logo" / f"seed-{args.seed}-n{args.fresh}"
        report_fresh(args.fresh, args.seed, folder)
        return
    started = time.perf_counter()
    problems = load(args.data_dir)
    count, perceived = len(problems), time.perf_counter() - started
    every = [(i, j) for i in range(6) for j in range(6)]
    official = score(problems, SHARPNESS, [OFFICIAL])
    split = mean(score(problems, SHARPNESS, every))
    deals = [
        mean(score([dealt_at_random(p, n) for p in problems], SHARPNESS, every)) for n in range(RANDOM_DEALS)
    ]
    dealt = Score(sum(d.pairs for d in deals) / len(deals), sum(d.images for d in deals) / len(deals))
    print(
        f"The perception agent on {count} classic problems, sharpness {SHARPNESS} "
        f"(every panel perceived in {perceived:.0f} s)"
    )
    line("", "images-to-sides", "image-to-side")
    solved, placed = sum(s.pairs for s in official), sum(round(2 * s.images) for s in official)
    line("official split (panels 5 and 11)", f"{solved:.0f} / {count}", f"{placed} / {2 * count}")
    line("36-split mean", f"{split.pairs:.1f}%", f"{split.images:.1f}%")
    line(
        f"random sides ({RANDOM_DEALS} deals x 36 splits)",
        f"{dealt.pairs:.1f}%",
        f"{dealt.images:.1f}%",
        "  (~50)",
    )
    report_sharpness(problems, every)
    print("per problem: official pair; 36 splits: solved as a pair, tests placed alone")
    for problem, first, each in zip(problems, official, score(problems, SHARPNESS, every), strict=True):
        verdict = "solved" if first.pairs else "wrong"
        print(f"  {problem.number:>3}  {verdict:6}  {100 * each.pairs:5.1f}%  {100 * each.images:5.1f}%")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
