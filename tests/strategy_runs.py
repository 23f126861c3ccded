"""Running a strategy on one problem with a scripted agent per role, as the strategy tests do.

A test module makes one `StrategyRunner` (its roles, dataset context, seed and
replies) and calls it per test, overriding what that test changes:

    result = run("direct", problem, options={"cot": "false"})
    [request] = result.reasoner.requests       # or result.agents["reasoner"]
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from datasets_io.problem import BongardProblem, Side
from graphs.answer import Answer
from graphs.blocks.sides import SideLabel
from graphs.nodes import SolveRuntime
from graphs.registry import DatasetContext, Reused
from graphs.solve import solve
from graphs.strategies.case_study_binary import TwoTestImages
from tests.scripted import Replies, Request, ScriptedAgent

LABELS: dict[Side, SideLabel] = {"left": "LEFT", "right": "RIGHT"}


@dataclass
class StrategyRun:
    """What one run answered, and the scripted agent behind each role (`run.agents[role]` or `run.ROLE`)."""

    answer: Answer
    agents: dict[str, ScriptedAgent]

    def __getattr__(self, role: str) -> ScriptedAgent:
        agents: dict[str, ScriptedAgent] = self.__dict__.get("agents", {})
        if role not in agents:
            raise AttributeError(f"no scripted agent for role {role!r} (roles: {', '.join(agents)})")
        return agents[role]


@dataclass(frozen=True)
class StrategyRunner:
    """Runs strategies with scripted agents named `scripted:ROLE`, each fed `replies`.

    `context` defaults to the problem's own dataset context. A queue of replies is
    copied to every role; give a role its own queue with `role_replies`.
    """

    render_dir: Path
    roles: tuple[str, ...] = ("describer", "reasoner")
    context: DatasetContext | None = None
    seed: int = 0
    replies: Replies | None = None
    role_replies: Mapping[str, Replies] = field(default_factory=dict)

    def __call__(
        self,
        name: str,
        problem: BongardProblem,
        *,
        options: dict[str, Any] | None = None,
        reused: dict[str, Reused] | None = None,
        seed: int | None = None,
        replies: Replies | None = None,
        role_replies: Mapping[str, Replies] | None = None,
    ) -> StrategyRun:
        own = {**self.role_replies, **(role_replies or {})}
        shared = replies if replies is not None else self.replies
        agents = {role: ScriptedAgent(f"scripted:{role}", own.get(role, shared)) for role in self.roles}
        runtime = SolveRuntime(
            agents={role: agent.managed() for role, agent in agents.items()},
            render_dir=self.render_dir / "renders",
        )
        context = self.context if self.context is not None else DatasetContext.of([problem])
        answer = asyncio.run(
            solve(
                name,
                problem,
                runtime,
                context=context,
                seed=self.seed if seed is None else seed,
                options=options,
                reused=reused,
            )
        )
        return StrategyRun(answer, agents)


def sides_asked(request: Request) -> list[Side]:
    """The true side of each test panel a call asks about (`extra["test_panels"]`: `left-test-6`...)."""
    sides: list[Side] = []
    for ref in request.call.extra["test_panels"]:
        side = str(ref).split("-")[0]
        assert side in ("left", "right"), f"not a side's panel: {ref}"
        sides.append("left" if side == "left" else "right")
    return sides


def two_test_images(first: Side, second: Side, form: type[BaseModel] = TwoTestImages) -> BaseModel:
    """An images-to-sides reply, in the case study's form or Bongard-RWR+'s, that puts the first and
    the second test panel on these sides."""
    sides = {
        key: {"explanation": "", "concept": "", "answer": LABELS[s]}
        for key, s in zip(FIRST_SECOND, (first, second), strict=True)
    }
    return form.model_validate({"concept": "", **sides})


FIRST_SECOND = ("first", "second")


def both_sides_right(request: Request) -> BaseModel:
    """Both test panels of an images-to-sides call put on their true sides, in the form asked for."""
    form = request.call.output_schema
    assert isinstance(form, type) and issubclass(form, BaseModel)
    first, second = sides_asked(request)
    return two_test_images(first, second, form)
