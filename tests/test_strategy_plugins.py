"""A strategy from another package, added through an entry point without editing the toolkit,
written against the author API (`from graphs import ...`) or against the modules that hold it."""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.errors import BongardError
from datasets_io.plugins import Registry
from graphs.nodes import SolveRuntime
from graphs.registry import STRATEGIES, get_strategy
from graphs.solve import solve
from tests.cli import run_bongard
from tests.distributions import installed_distribution
from tests.scripted import ScriptedAgent

IMPORTS = {
    "author-api": "from graphs import Ctx, Graph, SolveState, StrategyOptions, ask, free_answer, "
    "linear_graph, sheet_source, strategy",
    "module-paths": "from graphs.nodes import Ctx, SolveState, ask, free_answer, linear_graph, sheet_source\n"
    "from graphs.registry import Graph, StrategyOptions, strategy",
}
"""The same plugin's imports both ways: a plugin written before `graphs` re-exported its API still loads."""
PLUGIN = '''
"""A package's own strategy: one look at the sheet, then the rule, in one call."""
from pydantic import Field

{imports}


class OneLookOptions(StrategyOptions):
    hint: str = Field(default="", description="a sentence added to the question")


async def _look(state: SolveState, runtime: Ctx) -> SolveState:
    item = runtime.context
    text = f"Name the rule of the left side and of the right side. {item.inputs}"
    reply = await ask(item, "reasoner", text, [sheet_source(item)], task="answer", conversation="look")
    return {"answer": free_answer(reply)}


@strategy(
    "one-look",
    family="one_look",
    paper="A plugin package",
    section="-",
    roles=("reasoner",),
    calls="1 call: the sheet",
    options=OneLookOptions,
    prepare=lambda given: given.options.hint,
    judged=True,
)
def one_look() -> Graph:
    return linear_graph(SolveState, ("look", _look))
'''


@pytest.fixture(params=list(IMPORTS))
def installed_strategy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[None]:
    """A distribution naming its strategy module, as `pip install` would leave it."""
    STRATEGIES.names()  # the built-ins, before the plugin is installed
    monkeypatch.setattr(STRATEGIES, "_entries", dict(STRATEGIES._entries))
    monkeypatch.setattr(STRATEGIES, "_pending", None)  # look at the installed entry points again
    with installed_distribution(
        tmp_path / "site",
        monkeypatch,
        "one-look-plugin",
        {"one_look_plugin": PLUGIN.replace("{imports}", IMPORTS[request.param])},
        {"bongard_agents.strategies": {"one_look": "one_look_plugin"}},
    ):
        yield


def test_a_plugin_strategy_is_listed_described_and_solves(
    installed_strategy: None, shared_data: Path, tmp_path: Path
) -> None:
    listing = run_bongard("strategies")
    assert listing.returncode == 0 and any(
        line.startswith("│ one-look ") for line in listing.stdout.splitlines()
    )
    assert "│ direct " in listing.stdout  # the built-ins are still there
    shown = run_bongard("strategies", "one-look")
    assert "hint" in shown.stdout and "a sentence added to the question" in shown.stdout
    assert get_strategy("one-look").judged
    problem = next(p for p in open_dataset("bongard-rwr", shared_data).scan().problems if p.id == "31")
    reasoner = ScriptedAgent("scripted:reasoner")
    runtime = SolveRuntime(agents={"reasoner": reasoner.managed()}, render_dir=tmp_path / "renders")
    answer = asyncio.run(solve("one-look", problem, runtime, options={"hint": "Be brief."}))
    [request] = reasoner.requests
    assert "Be brief." in str(request.messages[0].content) and request.call.task == "answer"
    assert (answer.strategy, answer.problem, len(answer.trace)) == ("one-look", problem.key, 1)
    refused = run_bongard("strategies", "one-lok")
    assert refused.returncode == 2 and "did you mean 'one-look'?" in refused.stderr


def test_the_author_api_names_each_name_of_its_modules() -> None:
    """`graphs.__all__` (written out for the type checkers) is what `graphs` serves, each name the
    object its module holds."""
    import graphs

    assert sorted(graphs.__all__) == sorted(graphs._HOME_OF)
    for name, module in graphs._HOME_OF.items():
        assert getattr(graphs, name) is getattr(importlib.import_module(module), name), name
    with pytest.raises(AttributeError, match="no attribute 'solve_everything'"):
        _ = graphs.solve_everything


COLLIDING = '''
"""A package's strategy that takes a built-in's name."""
from graphs import Graph, SolveState, linear_graph, strategy


@strategy("direct", family="mine", paper="-", section="-", roles=("reasoner",), calls="-")
def my_direct() -> Graph:
    return linear_graph(SolveState)
'''


def test_a_plugin_taking_a_built_in_name_is_refused_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    STRATEGIES.names()
    for attribute in ("_entries", "_sources"):
        monkeypatch.setattr(STRATEGIES, attribute, dict(getattr(STRATEGIES, attribute)))
    monkeypatch.setattr(STRATEGIES, "_pending", None)
    with installed_distribution(
        tmp_path / "site",
        monkeypatch,
        "direct-plugin",
        {"direct_plugin": COLLIDING},
        {"bongard_agents.strategies": {"mine": "direct_plugin"}},
    ):
        refused = run_bongard("strategies")
    assert refused.returncode == 2
    assert "strategy 'direct' is registered twice, by graphs.strategies.case_study and by direct_plugin" in (
        " ".join(refused.stderr.split())
    )
    assert get_strategy("direct").build.__module__ == "graphs.strategies.case_study"  # still the built-in


def test_a_name_belongs_to_one_source_whatever_the_order() -> None:
    for first, second in (("pkg_a", "pkg_b"), ("pkg_b", "pkg_a")):
        things: Registry[str] = Registry("test.group", "thing")
        things.register("x", "one", source=first)
        things.register("x", "again", source=first)  # a module imported anew replaces its own entry
        with pytest.raises(BongardError, match=f"thing 'x' is registered twice, by {first} and by {second}"):
            things.register("x", "two", source=second)
        assert things.get("x") == "again"


@pytest.mark.parametrize(
    "module", [entry.value for entry in importlib.metadata.entry_points(group="bongard_agents.strategies")]
)
def test_each_strategy_module_can_be_imported_first(module: str) -> None:
    """`import graphs.strategies.paradigms` in a fresh process raised ImportError: its first strategy's
    registration loaded every strategy module, symbolic among them, which imports names paradigms
    had not defined yet. A module being imported now waits for the next lookup to load the others."""
    code = f"import {module}\nfrom graphs.registry import get_strategy\nprint(get_strategy('direct').name)"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "direct"
