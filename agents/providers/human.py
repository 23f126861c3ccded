"""`human:PSEUDONYM`: a study's participant, whose answers come from the study's pages.

A participant's run is written as they answer (`bongard study serve`); no request is ever sent, and
nothing is paid. The provider exists so the spec is known everywhere a run's agents are read, and so
a command that would call it says where a person's answers come from instead.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from agents.provider import Provider


class HumanAnswersOnly(ValueError):
    """A human agent asked to answer a call."""


def build(model: str, params: object) -> BaseChatModel:
    raise HumanAnswersOnly(
        f"human:{model} is a study's participant: their answers come from `bongard study serve`, "
        "never from a call (run a model agent instead)"
    )


PROVIDER = Provider(
    name="human",
    summary="a human study's participant (`bongard study`): answers given in a browser, no calls, no cost",
    build=build,
    reads_call_metadata=True,
)
