"""The reply limit of a model run locally, where neither the strategy's paper nor `-M max_tokens` sets one.

An API stops a reply at the model's own maximum output, which the papers that state no limit relied
on. A local engine has no such stop: llama.cpp and Ollama generate until the context is full, at a
few tokens a second on a CPU (SmolLM2 ran past 2,800 tokens in one `symbolic-rule-learning` call),
and vLLM's `SamplingParams` stops at 16 tokens where none is given, cutting every answer. So a local
engine gets this limit in the paper's silence: room for a long answer, with its reasoning, and a
reply that reaches it is recorded as cut off, like any other.
"""

from __future__ import annotations

from agents.provider import AgentParams

LOCAL_REPLY_TOKENS = 4096


def local_reply_tokens(params: AgentParams) -> int:
    """The reply limit a local engine is given: the one set (`-M`, the paper's), else the toolkit's."""
    return params.max_tokens or LOCAL_REPLY_TOKENS
