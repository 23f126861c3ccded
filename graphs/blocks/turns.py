"""Conversations checkpointed turn by turn: each question of a conversation is its own graph step.

A conversation held in one node repays every finished turn when the process dies part way, since
the node starts again from its first question. Here a conversation is a node that asks one question
per step and loops on itself; the state keeps each finished turn's reply (`turns`), and the node
rebuilds the conversation from the item and those replies (the system turn, each question as the
script gives it, each reply as it came) before asking the next one. The requests are those of one
uninterrupted conversation, and a resumed item asks only the questions no reply has answered.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict, cast

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from agents.call import AgentReply, ImageSource, TaskKind
from graphs.nodes import (
    CASE_STUDY,
    Conversation,
    Ctx,
    FanOut,
    Item,
    Node,
    SolveState,
    graph_of,
    traced,
    user_message,
)
from graphs.registry import Graph, StrategyError


class Turn(TypedDict):
    """One answered question, as the state keeps it: enough to rebuild the conversation and to
    choose the next question (a re-ask reads the parsed reply)."""

    conversation: str
    reply: str
    parsed: dict[str, Any] | None


class TurnsState(SolveState, total=False):
    turns: Annotated[list[Turn], operator.add]
    """Every finished turn of every conversation; one conversation's in the order they were asked."""


@dataclass(frozen=True)
class Question:
    """One user turn and how it is asked."""

    text: str
    task: TaskKind
    images: Sequence[ImageSource] = ()
    schema: type[BaseModel] | None = None
    extra: Mapping[str, Any] | None = None


Script = Callable[[Item[Any], list[Turn]], Question | None]
"""A conversation's questions: the one after the given finished turns, None when it is over. It is
asked again for every earlier turn when the conversation is rebuilt, so it must give the same."""
Finish = Callable[[Item[Any], AgentReply], Mapping[str, Any]]
"""What the conversation's last reply writes to the state (the answer, a side's description...)."""


@dataclass(frozen=True)
class Dialogue:
    """One conversation of a strategy: who is asked, under which name (as the trace shows it), what."""

    name: str
    role: str
    script: Script
    finish: Finish
    system: Callable[[Item[Any]], str] | None = None

    @property
    def node(self) -> str:
        return self.name.replace(" ", "_")

    def finished(self, state: Mapping[str, Any]) -> list[Turn]:
        return [turn for turn in state.get("turns", []) if turn["conversation"] == self.name]

    def replayed(self, item: Item[Any], finished: list[Turn]) -> Conversation:
        """The conversation as it stood after the finished turns, without asking anything again."""
        chat = Conversation(item, self.role, self.name, system=self.system(item) if self.system else None)
        for number, turn in enumerate(finished):
            question = self.script(item, finished[:number])
            if question is None:
                raise StrategyError(
                    f"conversation {self.name!r}: its checkpoint holds more turns than it asks"
                )
            chat.messages += [user_message(question.text, question.images), AIMessage(content=turn["reply"])]
            chat.images += question.images
            chat.turns += 1
        return chat


def turn_node(dialogue: Dialogue) -> Node[Any]:
    """One step of the conversation: its next question, asked after the finished turns."""

    async def turn(state: TurnsState, runtime: Ctx) -> TurnsState:
        item = runtime.context
        finished = dialogue.finished(state)
        question = dialogue.script(item, finished)
        if question is None:
            return {}  # nothing to ask (a result reused from an earlier run)
        chat = dialogue.replayed(item, finished)
        reply = await chat.ask(
            question.text, question.images, task=question.task, schema=question.schema, extra=question.extra
        )
        answered = Turn(conversation=dialogue.name, reply=reply.text, parsed=reply.parsed)
        update: dict[str, Any] = {"turns": [answered]}
        if dialogue.script(item, [*finished, answered]) is None:
            update |= dialogue.finish(item, reply)
        return cast(TurnsState, update)  # the finish writes keys of the strategy's own state

    return turn


Then = str | FanOut
"""Where a conversation goes once over: a node (or END), or a fan-out of `Send`s."""


def add_dialogue(
    graph: StateGraph[Any, Any, Any, Any], dialogue: Dialogue, then: Then, targets: list[str]
) -> None:
    """The conversation as a node that loops, one turn per step, until its script is over, then
    goes on to `then` (whose possible nodes are `targets`)."""
    wrapped: Any = traced(turn_node(dialogue))
    graph.add_node(dialogue.node, wrapped)

    def route(state: Mapping[str, Any], runtime: Ctx) -> Any:
        if dialogue.script(runtime.context, dialogue.finished(state)) is not None:
            return dialogue.node
        return then if isinstance(then, str) else then(state, runtime)

    graph.add_conditional_edges(dialogue.node, route, [dialogue.node, *targets])


def dialogues_graph(
    state: type[TurnsState], dialogues: Sequence[Dialogue], then: tuple[str, Node[Any]] | None = None
) -> Graph:
    """START -> every conversation at once, one turn per step each [-> `then`, once all are over] -> END."""
    graph = graph_of(state)
    after = then[0] if then else END
    for dialogue in dialogues:
        add_dialogue(graph, dialogue, after, [after])
        graph.add_edge(START, dialogue.node)
    if then:
        finish: Any = traced(then[1])
        graph.add_node(then[0], finish, defer=True)  # deferred: it waits for the longest conversation
        graph.add_edge(then[0], END)
    return graph.compile()


def shown_then_asked(
    shown: Callable[[Item[Any]], Sequence[Sequence[ImageSource]]],
    step_prompt: str,
    closing_prompt: str,
    *,
    task: TaskKind,
    closing_task: TaskKind,
    family: str = CASE_STUDY,
) -> Script:
    """The images of each turn, one turn at a time under numbered step prompts, then the closing
    question with no image of its own."""

    def script(item: Item[Any], finished: list[Turn]) -> Question | None:
        turns, number = shown(item), len(finished)
        if number < len(turns):
            text = item.prompts.fill(family, step_prompt, number=number + 1, count=len(turns))
            return Question(text, task, turns[number])
        return (
            Question(item.prompts.fill(family, closing_prompt), closing_task)
            if number == len(turns)
            else None
        )

    return script
