"""The README's and the documentation's snippets run, in the site's order, in one fresh workspace,
as a reader would run them: the README first, then each page of `mkdocs.yml`'s navigation.

- ```python blocks run whole in a fresh interpreter;
- ```bash blocks run line by line (`bongard ...` through the real entry point; `python -m
  benchmarks.X` and `bash scripts/X`, minutes each and run by hand, must name a module or script
  that exists);
- ```text blocks are usage synopses: each names a command that exists, and every `--option` it
  shows is one that command takes;
- the README's first block (the two setup commands) is what `.ci/run` itself runs.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli import run_bongard

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int
    language: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)} line {self.line}"

    def commands(self) -> list[str]:
        """Logical lines: continuations joined, comments and blank lines dropped."""
        joined = self.body.replace("\\\n", " ")
        return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _nav_pages(entries: list[Any]) -> Iterator[str]:
    for entry in entries:
        if isinstance(entry, str):
            yield entry
        else:
            for value in entry.values():
                yield from [value] if isinstance(value, str) else _nav_pages(value)


def pages() -> list[Path]:
    """The README, then the site's pages in the order of its navigation."""
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    return [README, *(ROOT / "docs" / page for page in _nav_pages(nav))]


def snippets(page: Path) -> list[Snippet]:
    text = page.read_text(encoding="utf-8")
    return [
        Snippet(page, text[: m.start()].count("\n") + 1, m.group(1), m.group(2)) for m in FENCE.finditer(text)
    ]


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> tuple[Path, dict[str, str]]:
    """A working folder with the team's data beside it (`../shared/data`) and a home of its own."""
    root = tmp_path_factory.mktemp("reader")
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared_data)
    (root / "work").mkdir()
    env = {"HOME": str(root / "home"), "BONGARD_HOME": "", "BONGARD_DATA": "", "BONGARD_PROMPTS": ""}
    return root / "work", env


def run_python(body: str, cwd: Path, env: dict[str, str], where: str) -> None:
    environment = {k: v for k, v in {**os.environ, **env}.items() if v}
    done = subprocess.run(
        [sys.executable, "-c", body], cwd=cwd, env=environment, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{where}:\n{done.stderr[-3000:]}"


def run_shell(command: str, cwd: Path, env: dict[str, str], where: str) -> None:
    words = shlex.split(command, comments=True)
    if words[0] == "bongard":
        result = run_bongard(*words[1:], env={k: (v or None) for k, v in env.items()}, cwd=cwd, timeout=600)  # type: ignore[misc]
        assert result.returncode == 0, f"{where}: {command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    elif words[0] == "bash" and words[1].startswith("scripts/"):  # minutes and the network: by hand
        assert (ROOT / words[1]).is_file(), f"{where}: no script {words[1]}"
    elif words[1:3] == ["-m", words[2]] and words[0].endswith("python"):
        assert importlib.util.find_spec(words[2]) is not None, f"{where}: no module {words[2]}"
    else:
        pytest.fail(f"{where}: the test does not know how to run {command!r}")


def check_synopsis(command: str, cwd: Path, env: dict[str, str], where: str) -> None:
    words = command.split()
    if words[0] != "bongard":
        return
    path = []
    for word in words[1:]:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        path.append(word)
    shown = run_bongard(*path, "--help", env={k: (v or None) for k, v in env.items()}, cwd=cwd)  # type: ignore[misc]
    assert shown.returncode == 0, f"{where}: `bongard {' '.join(path)}` is not a command"
    for option in OPTION.findall(command.split("#")[0]):
        assert option in shown.stdout, f"{where}: `bongard {' '.join(path)}` takes no {option}"


def test_every_page_is_in_the_navigation() -> None:
    """A page left out of `mkdocs.yml` would go unbuilt and its snippets untested."""
    assert sorted(pages()[1:]) == sorted((ROOT / "docs").rglob("*.md"))


def test_every_documented_snippet_runs(reader: tuple[Path, dict[str, str]]) -> None:
    cwd, env = reader
    readme, *rest = [snippet for page in pages() for snippet in snippets(page)]
    assert readme.page == README and readme.commands() == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/bongard run",
        "bash scripts/check",
    ]
    for snippet in rest:
        if snippet.language == "python":
            run_python(snippet.body, cwd, env, snippet.where)
        elif snippet.language == "bash":
            for command in snippet.commands():
                run_shell(command, cwd, env, snippet.where)
        elif snippet.language == "text":
            for command in snippet.commands():
                check_synopsis(command, cwd, env, snippet.where)
    report = cwd / "report"
    assert (report / "accuracy.svg").is_file() and (report / "comparison.md").is_file()
