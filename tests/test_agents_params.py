"""Typed provider parameters: checked before any agent is built, refused in one line with a suggestion."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from agents.providers.llamacpp import LlamaCppParams
from agents.providers.similarity import SimilarityParams
from agents.registry import AgentSpecError, check_agent_params, resolve_agent


def test_a_misspelt_parameter_is_refused_with_a_suggestion_and_the_keys_there_are() -> None:
    with pytest.raises(AgentSpecError) as refused:
        check_agent_params("openai:gpt-4o", {"temprature": "0"})
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("openai:gpt-4o: unknown parameter 'temprature' (did you mean 'temperature'?)")
    assert "openai takes temperature, max_tokens, seed" in message


def test_a_parameter_of_another_provider_is_unknown_here() -> None:
    with pytest.raises(AgentSpecError, match="unknown parameter 'ctx_size'; openai-compatible takes"):
        resolve_agent("openai-compatible:m@http://127.0.0.1:9/v1", {"ctx_size": "4096"})


def test_parameters_are_checked_without_building_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert check_agent_params("openai:gpt-4o", {"temperature": "0"}).temperature == 0.0  # no key needed
    params = check_agent_params("llamacpp:/no/such/model.gguf", {"ctx_size": "4096", "parallel": "2"})
    assert isinstance(params, LlamaCppParams) and (params.ctx_size, params.parallel) == (4096, 2)
    with pytest.raises(AgentSpecError, match="llamacpp:gemma3-270m: bad agent parameter: mmproj: "):
        check_agent_params("llamacpp:gemma3-270m", {"mmproj": "/no/such/projector.gguf"})


def test_a_bad_value_names_the_values_allowed() -> None:
    with pytest.raises(AgentSpecError) as refused:
        check_agent_params("similarity", {"aggregate": "median", "max_tokens": "0"})
    assert str(refused.value) == (
        "similarity: bad agent parameter: max_tokens: Input should be greater than or equal to 1; "
        "bad agent parameter: aggregate takes max, mean or min, not 'median'"
    )


def test_config_tables_and_options_are_checked_together() -> None:
    config: dict[str, dict[str, Any]] = {"*": {"temperature": 0}, "similarity": {"distance": "cosine"}}
    params = check_agent_params("similarity", {"aggregate": "mean"}, config=config)
    assert isinstance(params, SimilarityParams)
    assert (params.temperature, params.distance, params.aggregate) == (0, "cosine", "mean")
    with pytest.raises(AgentSpecError, match="unknown parameter 'distance'"):
        check_agent_params("perception", config=config | {"*": {"distance": "cosine"}})


def test_a_providers_own_settings_are_part_of_the_cache_key() -> None:
    assert SimilarityParams(temperature=0).sampling() == {"temperature": 0, "assignment": "joint"}
    assert SimilarityParams(distance="cosine").sampling() == {"distance": "cosine", "assignment": "joint"}


def test_bongard_agents_shows_a_providers_parameters() -> None:
    from graphs.cli import app  # the one test here that needs every room wired

    result = CliRunner().invoke(app, ["agents", "similarity"])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") > 2}
    assert "euclidean | cosine" in rows["distance"] and "euclidean" in rows["distance"].split("│")[3]
    assert "temperature" in rows and "sampling temperature" in rows["temperature"]
    assert "ctx_size" in CliRunner().invoke(app, ["agents", "llamacpp"]).output
