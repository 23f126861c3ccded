"""A strategy from another package, added through an entry point without editing the toolkit."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from graphs.nodes import SolveRuntime
from graphs.registry import STRATEGIES, get_strategy
from graphs.solve import solve
from tests.cli import run_bongard
from tests.distributions import installed_distribution
from tests.scripted import ScriptedAgent

PLUGIN = '''
"""A package's own strategy: one look at the sheet, then the rule, in one call."""
from pydantic import Field

from graphs.nodes import Ctx, SolveState, ask, free_answer, linear_graph, sheet_source
from graphs.registry import Graph, StrategyOptions, strategy


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


@pytest.fixture
def installed_strategy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution naming its strategy module, as `pip install` would leave it."""
    STRATEGIES.names()  # the built-ins, before the plugin is installed
    monkeypatch.setattr(STRATEGIES, "_entries", dict(STRATEGIES._entries))
    monkeypatch.setattr(STRATEGIES, "_pending", None)  # look at the installed entry points again
    with installed_distribution(
        tmp_path / "site", monkeypatch, "one-look-plugin", {"one_look_plugin": PLUGIN},
        {"bongard_agents.strategies": {"one_look": "one_look_plugin"}},
    ):  # fmt: skip
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
