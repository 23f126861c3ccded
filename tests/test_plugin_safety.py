"""Plugins that cannot shadow or break the toolkit (issue 48, item 2).

`register_provider(Provider(name="openai", ...))` or `JUDGE_KINDS.register("embedding", ...)`, the
in-process route the docs teach, silently replaced the built-in when it ran before the built-in
loaded; one plugin strategy missing `calls=` ended every command, built-ins included, in a 68-line
traceback. Now a taken name is refused whichever comes first, a plugin that fails to load is left out
with one warning, and the decorator's fields are typed, so mypy catches the missing one first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from langchain_core.language_models import FakeListChatModel
from mypy import api as mypy_api

from agents import registry
from agents.provider import Provider
from datasets_io.plugins import DuplicateName, Registry
from graphs.registry import STRATEGIES
from judges import specs
from tests.cli import run_bongard
from tests.distributions import installed_distribution

ROOT = Path(__file__).resolve().parents[1]
NO_CALLS = '''
"""A package's strategy whose decorator leaves out `calls`."""
from graphs import Graph, SolveState, linear_graph, strategy


@strategy("no-calls", family="mine", paper="-", section="-", roles=("reasoner",))
def no_calls() -> Graph:
    return linear_graph(SolveState)
'''


def impostor_provider() -> Provider:
    return Provider(
        name="openai", summary="not OpenAI", build=lambda model, params: FakeListChatModel(responses=[])
    )


def fresh_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "PROVIDERS", Registry(registry.ENTRY_POINT_GROUP, "provider", Provider))


@pytest.mark.parametrize("built_in_loaded_first", [False, True], ids=["before", "after"])
def test_an_in_process_openai_is_refused_before_and_after_the_built_in_loads(
    built_in_loaded_first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_providers(monkeypatch)
    if built_in_loaded_first:
        registry.get_provider("openai")
    with pytest.raises(
        DuplicateName, match=r"provider 'openai' is registered twice, by agents\.providers\.openai"
    ):
        registry.register_provider(impostor_provider())
    assert registry.get_provider("openai").summary != "not OpenAI"


@pytest.mark.parametrize("built_in_loaded_first", [False, True], ids=["before", "after"])
def test_an_in_process_embedding_judge_is_refused_before_and_after_the_built_in_loads(
    built_in_loaded_first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds: Registry[Callable[[str], object]] = Registry(specs.ENTRY_POINT_GROUP, "judge kind")
    monkeypatch.setattr(specs, "JUDGE_KINDS", kinds)
    if built_in_loaded_first:
        kinds.get("embedding")

    def mine(argument: str) -> object:
        return argument

    with pytest.raises(
        DuplicateName, match=r"judge kind 'embedding' is registered twice, by judges\.embedding_judge"
    ):
        kinds.register("embedding", mine)
    assert kinds.get("embedding") is not mine


@pytest.fixture
def broken_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A package whose strategy module raises on import, installed beside the built-ins."""
    STRATEGIES.names()
    for attribute in ("_entries", "_sources", "_left_out"):
        monkeypatch.setattr(STRATEGIES, attribute, dict(getattr(STRATEGIES, attribute)))
    monkeypatch.setattr(STRATEGIES, "_pending", None)
    with installed_distribution(
        tmp_path / "site",
        monkeypatch,
        "broken-strategies",
        {"broken_strategies": NO_CALLS},
        {"bongard_agents.strategies": {"broken": "broken_strategies"}},
    ):
        yield


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


@pytest.mark.usefixtures("broken_plugin")
def test_a_plugin_that_raises_on_import_leaves_every_command_working_with_one_warning(
    shared_data: Path, tmp_path: Path
) -> None:
    listed = run_bongard("strategies")
    assert listed.returncode == 0, listed.stderr
    assert "descriptive" in listed.stdout and "no-calls" not in listed.stdout
    [warning] = warnings_in(listed.stderr)
    assert "strategy 'broken' is left out" in warning and "package broken-strategies" in warning
    assert "TypeError" in warning and "calls" in warning
    ran = run_bongard(
        "run",
        "--strategy",
        "images-to-sides",
        "--model",
        "perception",
        "--dataset",
        "bongard-classic",
        "--problems",
        "1-2",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
        "-O",
        "holdout_test=true",
    )
    assert ran.returncode == 0, ran.stderr
    assert "2/2 items done" in ran.stdout and len(warnings_in(ran.stderr)) <= 1


def test_mypy_strict_catches_a_plugin_strategy_missing_calls(tmp_path: Path) -> None:
    plugin = tmp_path / "no_calls_plugin.py"
    plugin.write_text(NO_CALLS, encoding="utf-8")
    out, _, status = mypy_api.run(
        [
            str(plugin),
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
        ]
    )
    assert status == 1 and 'Missing named argument "calls" for "strategy"' in out, out
