"""Judge specs -> judges.

`KIND[:ARGUMENT]` names a judge kind, a judge that is not an agent, found by name in the
entry-point group `bongard_agents.judges` and built by calling it with the text after the
colon ('' when there is none): the built-in `embedding[:THRESHOLD]`, or one a package adds
as `my-judge = "my_pkg.judges:build"`, imported only when that judge is used. Any other spec
is an agent spec made an LLM judge (temperature 0, so re-judging is cached, where the model takes
a temperature: `agents.model_families`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.registry import AgentConfig, provider_names, resolve_agent, shared_params
from datasets_io.errors import did_you_mean
from datasets_io.plugins import Registry
from judges.ensemble import Judge
from judges.errors import JudgeError
from judges.llm_judge import LLMJudge
from judges.styles import JudgeStyle

ENTRY_POINT_GROUP = "bongard_agents.judges"
JUDGE_PARAMS = {"temperature": 0, "reask_unparsed": True}
"""An LLM judge decides at temperature 0 (so re-judging is cached) and gets one re-ask when its
structured verdict does not parse, before it counts as an abstention (unchanged from before
solving stopped re-asking by default)."""
JudgeKind = Callable[[str], Judge]
"""The argument after `KIND:` -> a ready judge."""
JUDGE_KINDS: Registry[JudgeKind] = Registry(ENTRY_POINT_GROUP, "judge kind")
"""Judge kinds by name (`KIND` of a `KIND:ARGUMENT` judge spec): a function from the argument to a
judge. Built-ins and plugins arrive through the entry-point group `bongard_agents.judges`."""


def build_judge(
    spec: str,
    style: JudgeStyle = "strict",
    params: Mapping[str, Any] | None = None,
    home: Path | None = None,
    config: AgentConfig | None = None,
) -> Judge:
    kind, _, argument = spec.partition(":")
    if kind in JUDGE_KINDS:
        return JUDGE_KINDS.get(kind)(argument)
    providers = provider_names()
    if kind not in providers:
        kinds = sorted(JUDGE_KINDS.names())
        raise JudgeError(
            f"unknown judge {spec!r}{did_you_mean(kind, [*kinds, *providers])}; judge kinds: "
            f"{', '.join(kinds)}; or an agent spec PROVIDER:MODEL with a provider of: {', '.join(providers)}"
        )
    agent = resolve_agent(spec, params or {}, config=config, home=home, defaults=JUDGE_PARAMS)
    return LLMJudge(agent, style)


def build_judges(
    specs: Sequence[str],
    style: JudgeStyle = "strict",
    params: Mapping[str, Any] | None = None,
    home: Path | None = None,
    config: AgentConfig | None = None,
) -> list[Judge]:
    """Judges for the specs. `params` (`-M`, given once) reach each agent judge whose provider takes
    them, as a run's do its agents (a key none takes is refused); `config` (an `--agent-config`
    file's tables) sets them per judge, beneath `params`."""
    named = [spec.strip() for spec in specs if spec.strip()]
    agents = [spec for spec in named if spec.partition(":")[0] not in JUDGE_KINDS]
    shares = shared_params(agents, params) if agents and params else {}
    return [build_judge(spec, style, shares.get(spec), home, config) for spec in named]
