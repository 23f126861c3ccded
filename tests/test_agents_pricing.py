"""Prices: exact entries, wildcards, a user's override file, and unknown models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.call import Usage
from agents.pricing import Price, find_price, price_table


def test_exact_entries_and_wildcards() -> None:
    assert find_price("openai:gpt-4o") == Price(2.5, 10.0)
    assert find_price("llamacpp:/models/any.gguf") == Price(0.0, 0.0)
    assert find_price("openai:some-future-model") is None


def test_an_override_file_replaces_and_extends_the_table(
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
    assert find_price("anthropic:claude-sonnet-4-5", table) == Price(3.0, 15.0)


def test_cost_is_per_million_tokens() -> None:
    assert Price(3.0, 15.0).cost(Usage(input_tokens=1000, output_tokens=100)) == pytest.approx(0.0045)
