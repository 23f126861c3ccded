"""Start-up: the CPU time of `bongard --help` and of importing the CLI, in fresh processes.

Run from the repository root: `python -m benchmarks.startup`. Each figure is the user + system
CPU time of a child process (the median of several runs), so other load on the machine changes
it much less than wall time; the bare interpreter is measured beside it as the floor. A run's
imports are measured as `bongard run` makes them, and again with the cycle collector running. Plotting,
data-frame and LangGraph imports belong to the commands that use them, not to start-up.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

BONGARD = Path(sys.executable).with_name("bongard")
IMPORTS = "import graphs.runs.runner, langgraph.graph, langchain_core.language_models"
RUN_IMPORTS = f"from graphs.cli.imports import uncollected_imports\nwith uncollected_imports(): {IMPORTS}"
"""A run's imports as `bongard run` makes them: the collector paused (`graphs.cli.imports`)."""
COMMANDS = {
    "python -c pass (the floor)": [sys.executable, "-c", "pass"],
    "python -c 'import graphs.cli'": [sys.executable, "-c", "import graphs.cli"],
    "bongard --help": [str(BONGARD), "--help"],
    "bongard run --help": [str(BONGARD), "run", "--help"],
    "a run's imports (runner, LangGraph, LangChain)": [sys.executable, "-c", RUN_IMPORTS],
    "the same, the collector running": [sys.executable, "-c", IMPORTS],
}


def child_cpu_seconds(command: list[str]) -> float:
    """User + system CPU time of one run of `command` (children are waited for one at a time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="runs per command (the median is shown)")
    args = parser.parse_args()
    child_cpu_seconds(COMMANDS["python -c 'import graphs.cli'"])  # warm the file cache and .pyc files
    print(f"CPU time (user + sys), median of {args.runs} runs:")
    for label, command in COMMANDS.items():
        times = [child_cpu_seconds(command) for _ in range(args.runs)]
        print(
            f"  {label:32s} {statistics.median(times):6.2f} s   (min {min(times):.2f}, max {max(times):.2f})"
        )


if __name__ == "__main__":
    main()
