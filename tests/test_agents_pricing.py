"""Prices: the free agents' table, a user's override file, the providers' published prices (dated
ids, cached input) from genai-prices, and unknown models or usage, which cost unknown, never $0."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.call import Usage
from agents.pricing import Price, PublishedPrice, find_price, price_table
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import TOKENS_IN, TOKENS_OUT, OpenAIChat
from tests.standins.server import StandInServer

THOUSAND_IN_HUNDRED_OUT = Usage(input_tokens=1000, output_tokens=100)


def test_free_agents_and_published_prices() -> None:
    assert find_price("llamacpp:/models/any.gguf") == Price(0.0, 0.0)
    assert find_price("perception") == Price(0.0, 0.0)
    gpt = find_price("openai:gpt-4o")
    assert gpt == PublishedPrice("openai", "gpt-4o")
    assert gpt.cost(THOUSAND_IN_HUNDRED_OUT) == pytest.approx((1000 * 2.5 + 100 * 10.0) / 1e6)
    for spec in (
        "openai:gpt-5-mini", "openai:o3", "anthropic:claude-sonnet-4-5-20250929", "anthropic:claude-opus-4-5",
        "gemini:gemini-2.5-flash-lite", "gemini:gemini-3-pro-preview",
    ):  # fmt: skip
        price = find_price(spec)
        assert price is not None, spec
        assert (price.cost(THOUSAND_IN_HUNDRED_OUT) or 0) > 0, spec
    assert find_price("openai:some-future-model") is None
    assert find_price("openai-compatible:qwen@http://127.0.0.1:8000/v1") is None


def test_cached_input_is_priced_at_its_own_rate() -> None:
    gpt = find_price("openai:gpt-4o")
    assert gpt is not None
    whole = gpt.cost(Usage(input_tokens=1_000_000, output_tokens=0))
    half_cached = gpt.cost(Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=500_000))
    assert whole == pytest.approx(2.5) and half_cached == pytest.approx(0.5 * 2.5 + 0.5 * 1.25)


def test_a_reply_without_usage_costs_unknown_unless_the_agent_is_free() -> None:
    unreported = Usage(reported=False)
    assert PublishedPrice("openai", "gpt-4o").cost(unreported) is None
    assert Price(3.0, 15.0).cost(unreported) is None
    assert Price(0.0, 0.0).cost(unreported) == 0.0
    assert (Usage() + unreported).reported is False


def test_an_override_file_replaces_and_extends_the_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    override = tmp_path / "prices.json"
    override.write_text(
        json.dumps(
            {
                "openai:gpt-4o": {"input_per_mtok": 1.0, "output_per_mtok": 4.0},
                "openai-compatible:*@http://my-lab:8000/v1": {"input_per_mtok": 0.2, "output_per_mtok": 0.2},
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("BONGARD_PRICES", str(override))
    table = price_table()
    assert find_price("openai:gpt-4o", table) == Price(1.0, 4.0)
    assert find_price("openai-compatible:qwen@http://my-lab:8000/v1", table) == Price(0.2, 0.2)
    assert find_price("anthropic:claude-sonnet-4-5", table) == PublishedPrice(
        "anthropic", "claude-sonnet-4-5"
    )


def test_cost_is_per_million_tokens() -> None:
    assert Price(3.0, 15.0).cost(Usage(input_tokens=1000, output_tokens=100)) == pytest.approx(0.0045)


@pytest.fixture
def openai_standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-standin-key-0123456789abcdef")
    with StandInServer(OpenAIChat(), responder=lambda body: "Left: one\nRight: two") as server:
        yield server


@pytest.mark.parametrize(
    ("model", "cost"),
    [
        ("gpt-4o", f"${(2 * (TOKENS_IN * 2.5 + TOKENS_OUT * 10.0) / 1e6):.4f}"),
        ("some-future-model", "unknown"),
    ],
)
def test_a_runs_cost_is_the_published_price_or_unknown(
    model: str, cost: str, openai_standin: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    ran = run_bongard(
        "run",
        "--strategy",
        "direct",
        "--model",
        f"openai:{model}",
        "-M",
        f"base_url={openai_standin.url}/v1",
        "--dataset",
        "bongard-classic",
        "--problems",
        "1-2",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    summary = json.loads(run_bongard("runs", "show", run_id, "--json", "--home", tmp_path).stdout)
    known = summary["cost_usd"]
    assert (f"${known:.4f}" if known is not None else "unknown") == cost
    shown = run_bongard("runs", "show", run_id, "--home", tmp_path).stdout
    assert cost in shown
