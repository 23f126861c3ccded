"""A cell's requests rendered without paying for one: its strategy run offline on a few problems.

The plan needs what each call of a cell would send: its text, the images at the size the request
carries them, and how many earlier replies its conversation holds. The strategy's own graph
renders them: the cell's run is made in a scratch workspace on its first few problems, with the
offline perception agent answering in every role (it answers every case-study task without a
model), and each request is recorded as it would go out (`agents.managed.CallWatch`). A model's
replies are not the perception agent's, so a reply a request carries (an earlier turn of its
conversation, or a description quoted into a later prompt) is not measured here: it is counted,
and the plan prices it at the model's expected reply length.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from agents.call import AgentReply, CallSpec
from agents.images import DEFAULT_MAX_SIDE, PATH_BLOCK_KEY, ImagePolicy, is_path_block, sent_size
from agents.machine_notes import for_prompt
from agents.managed import ManagedAgent
from agents.registry import resolve_agent
from graphs.runs.runner import RunConfig, Runner
from results.store import STORE_FILE, ResultsStore

REHEARSAL_AGENT = "perception"
DEFAULT_REHEARSED = 3
"""Problems rehearsed per cell by default: calls and panels differ little between problems of one
dataset, and the plan scales what they send to the cell's problems."""


@dataclass(frozen=True)
class RenderedCall:
    """What one call sends: its texts, its images' sizes as sent, and the earlier replies it carries."""

    role: str
    task: str
    texts: tuple[str, ...]
    images: tuple[tuple[int, int], ...]
    replies: int


@dataclass
class Rehearsal:
    calls: list[RenderedCall] = field(default_factory=list)
    problems: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    """Problem -> why its rehearsal failed (a task the perception agent cannot do)."""

    @property
    def complete(self) -> bool:
        return self.problems > 0 and not self.failures


QUOTED_REPLY_CHARS = 20
"""A reply shorter than this is not looked for inside later prompts (a `left` is in every one)."""


class _Recorder:
    """A `CallWatch` recording each request of one role, its images sized by that role's policy;
    the replies of every role, shared, so a reply quoted into a later prompt is told from its text."""

    def __init__(self, role: str, policy: ImagePolicy, into: list[RenderedCall], replies: list[str]) -> None:
        self.role, self.policy, self.into, self.replies = role, policy, into, replies

    def before(self, messages: Sequence[BaseMessage], call: CallSpec) -> None:
        texts: list[str] = []
        images: list[tuple[int, int]] = []
        replies = 0
        for message in messages:
            if isinstance(message, AIMessage):
                replies += 1
                continue
            blocks: list[Any] = (
                [message.content] if isinstance(message.content, str) else list(message.content)
            )
            for block in blocks:
                if is_path_block(block):
                    images.append(sent_size(Path(block[PATH_BLOCK_KEY]), self.policy))
                elif isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text"):
                    text, quoted = self._unquoted(
                        block if isinstance(block, str) else str(block.get("text", ""))
                    )
                    texts.append(text)
                    replies += quoted
        self.into.append(RenderedCall(self.role, call.task, tuple(texts), tuple(images), replies))

    def _unquoted(self, text: str) -> tuple[str, int]:
        """The text without the earlier replies quoted in it, and how many there were."""
        quoted = 0
        for reply in self.replies:
            if reply in text:
                quoted += text.count(reply)
                text = text.replace(reply, "")
        return text, quoted

    def after(self, reply: AgentReply) -> None:
        quotable = for_prompt(reply.text).strip()  # as a later prompt quotes it: no machine notes
        if len(quotable) >= QUOTED_REPLY_CHARS:
            self.replies.append(quotable)


def rehearse(
    prepared: RunConfig, problems: Sequence[str], policies: Mapping[str, ImagePolicy] | None = None
) -> Rehearsal:
    """The requests `prepared`'s strategy makes on `problems` (first attempt), rendered offline."""
    policies = policies or {}
    rehearsal = Rehearsal(problems=len(problems))
    if not problems:
        return rehearsal
    config = prepared.model_copy(
        update={
            "agents": {role: REHEARSAL_AGENT for role in prepared.agents},
            "agent_params": {},
            "agent_config": {},
            "paper_decoding": [],
            "decoding_dropped": {},
            "problems": list(problems),
            "sample": None,
            "attempts": 1,
            "excluded": [],
        }
    )
    with tempfile.TemporaryDirectory(prefix="bongard-rehearsal-") as scratch:
        home = Path(scratch)
        store = ResultsStore(home / STORE_FILE)
        try:
            runner = Runner(config, store, home)
            agents: dict[str, ManagedAgent] = {}
            replies: list[str] = []
            for role in config.agents:
                agent = resolve_agent(REHEARSAL_AGENT, {"cache": False}, home=home)
                agent.watch = _Recorder(
                    role, policies.get(role, ImagePolicy(DEFAULT_MAX_SIDE)), rehearsal.calls, replies
                )
                agents[role] = agent
            runner.__dict__["agents"] = agents  # the cached property, filled with the recording agents
            run_id = store.create_run(config.model_dump(mode="json"), "rehearsal")
            asyncio.run(runner.run(run_id))
            rehearsal.failures = {problem: error for (problem, _), error in store.item_errors(run_id).items()}
        finally:
            store.close()
    return rehearsal
