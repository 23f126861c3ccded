"""`perception`: the offline perception agent (classical vision and rule induction, no model, no key)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from agents.perception import VERSION
from agents.provider import AgentParams, Provider


class PerceptionParams(AgentParams):
    def own_settings(self) -> dict[str, Any]:
        """The agent's version is always in the cache key: replies cached by an earlier version
        (other measures, rules or decisions) must not answer for this one."""
        return {**super().own_settings(), "version": VERSION}


def build(model: str, params: PerceptionParams) -> BaseChatModel:
    if model != "classical":
        raise ValueError(f"perception has one model, 'classical' (asked for {model!r})")
    from agents.perception.agent import PerceptionChatModel

    return PerceptionChatModel()


PROVIDER = Provider(
    name="perception",
    summary="offline perception agent: OpenCV measurements and induced rules, no model or key",
    build=build,
    params=PerceptionParams,
    requires=("cv2", "skimage"),
    extra=None,
    reads_call_metadata=True,
    deterministic=True,
    default_model="classical",
    needs_images="it measures the images a call shows and reads no text",
)
