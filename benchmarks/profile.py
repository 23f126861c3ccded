"""Where `bongard run`'s CPU goes: a py-spy profile of one run, summed by layer.

Run from the repository root: `python -m benchmarks.profile [--problems N] [--concurrency C] [--client sdk]`
(py-spy must be installed in the venv: `pip install py-spy`). It runs `bongard run --strategy
descriptive` against the stand-in server of `benchmarks.latency_server` (its own process, 100 ms
latency, response cache off) with `py-spy record` attached, then gives each sample to the layer
of the innermost frame that belongs to one (HTTP, the openai SDK, LangChain, the checkpointer,
LangGraph, images, prompts, the results store, the toolkit's own code), imports apart. The shares
of the samples taken after start-up, scaled by the run's CPU per call, say how many milliseconds
of each call each layer costs. py-spy samples what the process is doing, not the kernel's CPU
account: the scaling is an estimate, the shares are what is measured.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.runs import BONGARD, latency_server, measured_child, model_args, run_parser

ROOT = Path(__file__).resolve().parents[1]
HTTP = "HTTP (aiohttp, httpx, httpcore, anyio)"
LIBRARIES = {
    HTTP: ("aiohttp/", "multidict/", "yarl/", "httpx", "httpcore", "h11/", "anyio/"),
    "openai SDK": ("openai/",),
    "LangChain": ("langchain_core/", "langchain_openai/", "langsmith/"),
    "checkpointer (SQLite)": ("langgraph/checkpoint/",),
    "LangGraph": ("langgraph/",),
    "images": ("PIL/",),
    "progress line (rich)": ("rich/",),
    "result table (pandas)": ("pandas/", "numpy/"),
}
"""Layers by the packages their frames are in; the first that matches names a frame (so LangGraph's
checkpointer is not LangGraph)."""
TOOLKIT = {
    "checkpointer (SQLite)": ("graphs/runs/checkpoints.py",),
    "images": ("datasets_io/images.py", "datasets_io/render.py", "agents/images.py"),
    HTTP: ("agents/wire_sessions.py", "agents/http_pool.py"),
    "prompts": ("agents/prompt_library.py",),
    "results store": ("results/store.py",),
}
"""The toolkit's own modules that belong to a layer; its other code is a layer of its own."""
IMPORTS = "<frozen importlib._bootstrap"
IMPORTS_LAYER = "imports (start-up)"
EVENT_LOOP = "event loop (asyncio)"
OTHER = "interpreter, other"
IDLE = "idle"
WAITING = ("EpollSelector.select (", "Condition.wait (", "Event.wait (", "_worker (", "Queue.get (")
"""A waiting thread's innermost frame (py-spy's own idle detection misses them here): the event
loop's poll, a condition or a pool thread waiting (the checkpoints' thread among them)."""


def frame_layer(frame: str) -> str | None:
    """The layer of one `function (path:line)` frame; None for the stdlib and the toolkit's own code."""
    path = frame.rsplit(" (", 1)[-1]
    if "/site-packages/" in path:
        package = path.split("/site-packages/", 1)[1]
        return next((name for name, found in LIBRARIES.items() if package.startswith(found)), None)
    if path.startswith(f"{ROOT}/"):
        module = path.removeprefix(f"{ROOT}/")
        return next((name for name, found in TOOLKIT.items() if module.startswith(found)), None)
    return None


def layer(stack: list[str]) -> str:
    """The layer of a sample: idle; imports; else that of its innermost frame in a layer, the event
    loop's if asyncio's frames run between that and the toolkit code that started it, the toolkit's."""
    if not stack[-1] or stack[-1].startswith(WAITING):
        return IDLE
    if any(IMPORTS in frame for frame in stack):
        return IMPORTS_LAYER
    in_event_loop = False
    for frame in reversed(stack):
        if (found := frame_layer(frame)) is not None:
            return found
        if "/asyncio/" in frame:
            in_event_loop = True
        elif f"({ROOT}/" in frame:
            return EVENT_LOOP if in_event_loop else "the toolkit's own code"
    return EVENT_LOOP if in_event_loop else OTHER


def summary(raw: Path) -> Counter[str]:
    """Samples per layer from py-spy's raw (collapsed) output: `frame;frame;... count` per line."""
    samples: Counter[str] = Counter()
    for line in raw.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        samples[layer(stack.split(";"))] += int(count)
    return samples


def print_summary(samples: Counter[str], cpu_per_call_ms: float | None) -> None:
    """The layers' shares of the busy samples after start-up, and their ms per call where known."""
    counted = {name: count for name, count in samples.items() if name not in (IMPORTS_LAYER, IDLE)}
    busy = sum(counted.values())
    print(
        f"  {sum(samples.values())} samples of its threads: {samples[IDLE]} idle, "
        f"{samples[IMPORTS_LAYER]} in imports, {busy} busy after start-up"
    )
    print("| layer | share of the busy samples | ms of CPU per call |\n| --- | --- | --- |")
    for name, count in sorted(counted.items(), key=lambda item: -item[1]):
        per_call = "" if cpu_per_call_ms is None else f"{count / busy * cpu_per_call_ms:.2f}"
        print(f"| {name} | {count / busy:.0%} | {per_call} |")
    if cpu_per_call_ms is not None:
        print(f"  CPU per call under py-spy {cpu_per_call_ms:.1f} ms (its sampling adds to it)")


def main() -> None:
    parser = run_parser(__doc__)
    parser.add_argument(
        "--client",
        choices=("lean", "sdk"),
        default="lean",
        help="the toolkit's own OpenAI-protocol client, or ChatOpenAI and the openai SDK (the path before)",
    )
    parser.add_argument("--keep", type=Path, help="also write py-spy's raw output here")
    parser.add_argument("--summarize", type=Path, help="only summarize this kept raw output")
    args = parser.parse_args()
    if args.summarize:
        print_summary(summary(args.summarize), None)
        return
    work = Path(tempfile.mkdtemp(prefix="bongard-bench-profile-"))
    raw = args.keep or work / "profile.txt"
    try:
        with latency_server(args.latency_ms, work) as server:
            command = [
                str(BONGARD), "run", "--strategy", "descriptive", *model_args(server, args.client),
                "--dataset", "bongard-classic", "--problems", f"1-{args.problems}",
                "--concurrency", str(args.concurrency), "-M", "temperature=0", "-M", "cache=false",
                "--home", str(work / "home"),
            ]  # fmt: skip
            figures = measured_child("bongard run under py-spy", command, server, profile=raw)
        samples = summary(raw)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"profile: `bongard run` x descriptive through the {args.client} client, {figures.calls} calls, "
        f"{args.concurrency} in flight"
    )
    print_summary(samples, figures.cpu_per_call_ms)


if __name__ == "__main__":
    main()
