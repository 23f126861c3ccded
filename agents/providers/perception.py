"""`perception`: the offline perception agent (classical vision and rule induction, no model, no key)."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from agents.provider import AgentParams, Provider


def build(model: str, params: AgentParams) -> BaseChatModel:
    if model != "classical":
        raise ValueError(f"perception has one model, 'classical' (asked for {model!r})")
    from agents.perception.agent import PerceptionChatModel

    return PerceptionChatModel()


PROVIDER = Provider(
    name="perception",
    summary="offline perception agent: OpenCV measurements and induced rules, no model or key",
    build=build,
    requires=("cv2", "skimage"),
    extra=None,
    reads_call_metadata=True,
    deterministic=True,
    default_model="classical",
)
