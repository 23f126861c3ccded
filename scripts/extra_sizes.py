"""What each extra adds to an install, measured from uv.lock's wheel sizes, without downloading.

Answers "what does `pip install 'bongard-agents[clip]'` pull onto this machine?" for the
platform and Python it runs on: the packages an extra adds over the base install and the bytes of
the wheels chosen for them, the CUDA ones counted apart. Run: `python scripts/extra_sizes.py`.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = "bongard-agents"
LOCK_EXTRA = re.compile(r"extra\s*(==|!=)\s*'(?:extra|group)-\d+-bongard-agents-([a-z0-9-]+)'")
CUDA = re.compile(r"^(nvidia-|cuda-|triton$)")


@dataclass(frozen=True)
class Pulled:
    packages: frozenset[str]
    wheel_bytes: int
    cuda_bytes: int
    no_wheel: frozenset[str]


def marker_holds(marker: str | None, extras: frozenset[str]) -> bool:
    """A lock marker on this platform, uv's encoded extras read as the ones asked for."""
    if not marker:
        return True

    def chosen(match: re.Match[str]) -> str:
        held = (match.group(2) in extras) == (match.group(1) == "==")
        return "python_version != '0'" if held else "python_version == '0'"

    return Marker(LOCK_EXTRA.sub(chosen, marker)).evaluate()


def wheel_size(package: dict[str, Any], ranks: dict[Any, int]) -> int | None:
    """The size of the wheel pip would pick here (the best-ranked tag), or None without one."""
    best: tuple[int, int] | None = None
    for wheel in package.get("wheels", []):
        _, _, _, tags = parse_wheel_filename(wheel["url"].rsplit("/", 1)[-1])
        rank = min((ranks[tag] for tag in tags if tag in ranks), default=None)
        if rank is not None and (best is None or rank < best[0]):
            best = (rank, int(wheel.get("size", 0)))
    return None if best is None else best[1]


def closure(lock: dict[str, Any], extras: frozenset[str]) -> dict[str, dict[str, Any]]:
    """Every locked package the root with `extras` installs here, keyed by name."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for package in lock["package"]:
        by_name.setdefault(canonicalize_name(package["name"]), []).append(package)
    root = by_name[ROOT][0]
    wanted = [*root.get("dependencies", [])]
    for extra in extras:
        wanted += root.get("optional-dependencies", {}).get(extra, [])
    found: dict[str, dict[str, Any]] = {}
    while wanted:
        dependency = wanted.pop()
        if not marker_holds(dependency.get("marker"), extras):
            continue
        name = canonicalize_name(dependency["name"])
        versions = by_name[name]
        package = next((p for p in versions if p["version"] == dependency.get("version")), versions[0])
        for extra in dependency.get("extra", []):
            wanted += package.get("optional-dependencies", {}).get(extra, [])
        if name in found:
            continue
        found[name] = package
        wanted += package.get("dependencies", [])
    return found


def pulled(lock: dict[str, Any], extra: str | None) -> Pulled:
    ranks = {tag: rank for rank, tag in enumerate(sys_tags())}
    base = closure(lock, frozenset())
    chosen = closure(lock, frozenset({extra})) if extra else base
    added = {name: package for name, package in chosen.items() if extra is None or name not in base}
    sizes = {name: wheel_size(package, ranks) for name, package in added.items()}
    return Pulled(
        packages=frozenset(added),
        wheel_bytes=sum(size or 0 for size in sizes.values()),
        cuda_bytes=sum(size or 0 for name, size in sizes.items() if CUDA.match(name)),
        no_wheel=frozenset(name for name, size in sizes.items() if size is None),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lock", type=Path, default=Path(__file__).resolve().parent.parent / "uv.lock")
    args = parser.parse_args()
    lock = tomllib.loads(args.lock.read_text())
    extras = sorted(next(p for p in lock["package"] if p["name"] == ROOT)["optional-dependencies"])
    print(f"wheels for {next(iter(sys_tags()))}, from {args.lock.name}; MB = 10^6 bytes")
    print(f"{'install':<10} {'packages':>8} {'wheels MB':>10} {'of it CUDA MB':>14}  built from source")
    for extra in [None, *extras]:
        got = pulled(lock, extra)
        name = "base" if extra is None else f"+{extra}"
        built = ", ".join(sorted(got.no_wheel)) or "-"
        megabytes = f"{got.wheel_bytes / 1e6:>10.0f} {got.cuda_bytes / 1e6:>14.0f}"
        print(f"{name:<10} {len(got.packages):>8} {megabytes}  {built}")


if __name__ == "__main__":
    main()
