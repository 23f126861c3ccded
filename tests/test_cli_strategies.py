"""`bongard strategies`, `bongard graph`, and replacing a prompt without touching the toolkit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agents.prompt_library import PromptLibrary
from datasets_io.catalog import open_dataset
from graphs.nodes import CASE_STUDY, SolveRuntime
from graphs.protocol_cards import card_fields, markdown_table
from graphs.registry import get_strategy, strategy_names
from graphs.solve import solve
from tests.cli import run_bongard
from tests.scripted import ScriptedAgent


def test_strategies_lists_each_with_paper_roles_and_calls() -> None:
    result = run_bongard("strategies")
    assert result.returncode == 0
    for name in strategy_names():
        info = get_strategy(name)
        row = next(line for line in result.stdout.splitlines() if line.startswith(f"│ {name} "))
        assert info.section.split(",")[0] in row and all(role in row for role in info.roles[:1])


STRATEGIES_PAGE = Path(__file__).resolve().parent.parent / "docs" / "strategies.md"
TABLE_START = "<!-- protocol table: `bongard strategies --markdown` writes it; a test keeps them equal -->"
TABLE_END = "<!-- end of protocol table -->"


@pytest.mark.parametrize("name", strategy_names())
def test_each_strategy_shows_its_protocol_card(name: str) -> None:
    """The paper's protocol is declared for every built-in strategy and printed in full."""
    info = get_strategy(name)
    assert info.card is not None and all(vars(info.card).values()), name
    shown = " ".join(run_bongard("strategies", name).stdout.split())  # the terminal wraps long lines
    for heading, text in card_fields(info).items():
        assert " ".join(f"{heading}: {text}".split()) in shown
    assert "-M reask_unparsed=true" in shown


def test_departures_from_the_paper_are_named_on_the_card() -> None:
    shown = " ".join(run_bongard("strategies", "images-to-sides").stdout.split())
    assert "options beyond the paper (off by default): -S retry_same_side: true re-asks once" in shown
    assert get_strategy("direct").departures() == []


def test_the_documented_protocol_table_is_the_registrys() -> None:
    page = STRATEGIES_PAGE.read_text(encoding="utf-8")
    table = page.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    generated = run_bongard("strategies", "--markdown").stdout.strip()
    assert generated == markdown_table(get_strategy(name) for name in strategy_names())
    assert table == generated, (
        "docs/strategies.md protocol table is stale: paste `bongard strategies --markdown`"
    )


@pytest.mark.parametrize("name", strategy_names())
def test_graph_draws_each_strategy_as_mermaid(name: str) -> None:
    result = run_bongard("graph", name)
    assert result.returncode == 0
    assert "graph TD;" in result.stdout and "__start__" in result.stdout and "__end__" in result.stdout


def test_every_prompt_names_the_paper_prompt_it_follows() -> None:
    folder = Path(__file__).resolve().parents[1] / "graphs" / "prompts" / "case_study"
    for path in folder.glob("*.md"):
        template = PromptLibrary(user_dir=None).get(CASE_STUDY, path.stem)
        assert template.follows and ("Prompt" in template.follows or "Section" in template.follows), path.name


def test_a_user_prompt_file_replaces_the_built_in_one(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "prompts" / "case_study" / "direct.md"
    mine.parent.mkdir(parents=True)
    mine.write_text(
        "<!-- follows: my own protocol -->\nSay how the sides differ, in French.", encoding="utf-8"
    )
    monkeypatch.setenv("BONGARD_PROMPTS", str(tmp_path / "prompts"))
    problem = open_dataset("bongard-classic", shared_data).problem("1")
    scripted = ScriptedAgent()
    runtime = SolveRuntime(agents={"default": scripted.managed()}, render_dir=tmp_path / "renders")
    asyncio.run(solve("direct", problem, runtime))
    [request] = scripted.requests
    assert "Say how the sides differ, in French." in str(request.messages[0].content)
