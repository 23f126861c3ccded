"""The offline vLLM engine's calls in flight go to the engine together, as one batch.

A stand-in of `vllm.LLM` records each `chat` it is asked; its first call is held until the
test has the other calls waiting, so what the next call carries is exact, not a race.
"""

from __future__ import annotations

import importlib.machinery
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agents.providers.vllm_offline import SharedEngine


class HeldEngine:
    """Answers each conversation with its last message; the first `chat` waits for `release`; a
    conversation saying "too long" fails its whole call, as vLLM's prompt checks do."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Any], Any]] = []
        self.release = threading.Event()

    def chat(self, messages: list[Any], sampling_params: Any, use_tqdm: bool = True) -> list[Any]:
        self.calls.append((messages, sampling_params))
        if len(self.calls) == 1:
            assert self.release.wait(10)
        if any(conversation[-1]["content"] == "too long" for conversation in messages):
            raise ValueError("the prompt is longer than the model's context")
        return [f"reply to {conversation[-1]['content']}" for conversation in messages]


@pytest.fixture(autouse=True)
def sampling_params(monkeypatch: pytest.MonkeyPatch) -> None:
    """`vllm.SamplingParams` as the settings it is given, so a test sees what the engine got."""
    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    module.SamplingParams = lambda **settings: settings  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)


def ask_while_held(
    engine: SharedEngine, held: HeldEngine, asked: list[tuple[str, dict[str, Any]]]
) -> list[Any]:
    """The first question alone, held in the engine until the others wait; each one's outcome."""

    def one(question: str, sampling: dict[str, Any]) -> Any:
        try:
            return engine.chat([{"role": "user", "content": question}], sampling)
        except ValueError as error:
            return error

    with ThreadPoolExecutor(len(asked)) as pool:
        first = pool.submit(one, *asked[0])
        while not held.calls:
            time.sleep(0.01)
        rest = [pool.submit(one, *question) for question in asked[1:]]
        deadline = time.monotonic() + 10  # the others queued behind the held call (white box)
        while len(engine._waiting) < len(rest) and time.monotonic() < deadline:
            time.sleep(0.01)
        held.release.set()
        return [first.result(), *(future.result() for future in rest)]


def test_calls_waiting_for_the_engine_go_in_one_batch() -> None:
    held = HeldEngine()
    sampled = {"temperature": 0.0, "stop": None}
    asked = [(f"q{n}", sampled) for n in range(5)]
    replies = ask_while_held(SharedEngine(held), held, asked)
    assert replies == [f"reply to q{n}" for n in range(5)]  # each call its own reply
    assert [len(messages) for messages, _ in held.calls] == [1, 4]
    assert held.calls[1][1] == sampled  # one SamplingParams where they agree
    mixed = [("a", sampled), ("b", sampled), ("c", {"temperature": 0.7, "stop": None})]
    held = HeldEngine()
    assert ask_while_held(SharedEngine(held), held, mixed) == ["reply to a", "reply to b", "reply to c"]
    assert held.calls[1][1] == [sampled, {"temperature": 0.7, "stop": None}]  # else one each


def test_a_failing_request_fails_only_its_own_call() -> None:
    held = HeldEngine()
    sampled = {"temperature": 0.0, "stop": None}
    replies = ask_while_held(
        SharedEngine(held), held, [("q0", sampled), ("q1", sampled), ("too long", sampled), ("q3", sampled)]
    )
    assert replies[:2] == ["reply to q0", "reply to q1"] and replies[3] == "reply to q3"
    assert isinstance(replies[2], ValueError)
    # The batch of the three waiting failed whole; then each went alone.
    assert [len(messages) for messages, _ in held.calls] == [1, 3, 1, 1, 1]
