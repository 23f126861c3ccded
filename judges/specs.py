"""Judge specs -> judges: agent specs become LLM judges (temperature 0, so re-judging is cached);
`embedding` or `embedding:THRESHOLD` is the offline embedding-similarity member."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.registry import resolve_agent
from judges.embedding_judge import DEFAULT_THRESHOLD, EmbeddingJudge
from judges.ensemble import Judge
from judges.llm_judge import JudgeStyle, LLMJudge

EMBEDDING = "embedding"


def build_judge(
    spec: str, style: JudgeStyle = "strict", params: Mapping[str, Any] | None = None, home: Path | None = None
) -> Judge:
    name, _, threshold = spec.partition(":")
    if name == EMBEDDING:
        return EmbeddingJudge(float(threshold) if threshold else DEFAULT_THRESHOLD)
    return LLMJudge(resolve_agent(spec, {"temperature": 0, **(params or {})}, home=home), style)


def build_judges(
    specs: Sequence[str],
    style: JudgeStyle = "strict",
    params: Mapping[str, Any] | None = None,
    home: Path | None = None,
) -> list[Judge]:
    return [build_judge(spec.strip(), style, params, home) for spec in specs if spec.strip()]
