"""A scripted agent that records every request and replies by task kind: for call-structure tests.

It is a LangChain chat model registered as a non-LLM provider, so it receives
each call's `CallSpec` (task kind, schema, the panels behind every image) and
the messages exactly as the strategy built them, images still as paths.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from agents.call import CallSpec, schema_json
from agents.managed import ManagedAgent
from agents.provider import Provider


@dataclass
class Request:
    messages: list[BaseMessage]
    call: CallSpec

    @property
    def images(self) -> list[list[str]]:
        return [[panel.ref for panel in image.panels] for image in self.call.images]

    def text(self) -> str:
        """The text of the last message, as the agent reads it."""
        content = self.messages[-1].content
        if isinstance(content, str):
            return content
        return "\n".join(str(b["text"]) for b in content if isinstance(b, dict) and b.get("type") == "text")

    def image_paths(self) -> list[str]:
        return [
            str(block["path"])
            for message in self.messages
            for block in (message.content if isinstance(message.content, list) else [])
            if isinstance(block, dict) and block.get("type") == "image"
        ]


def schema_fields(call: CallSpec) -> set[str]:
    return set(schema_json(call.output_schema).get("properties", {})) if call.output_schema else set()


def _side_of(ref: str) -> str:
    return ref.split("-")[0]


def structured_reply(request: Request) -> dict[str, Any] | None:
    """Valid replies for the structured calls of the paradigm and Wonderland strategies."""
    call, fields = request.call, schema_fields(request.call)
    if "conclusion" in fields:
        positive = _side_of(call.extra["test_panels"][0]) == "left"
        reply = {"conclusion": "positive" if positive else "negative"}
        return reply | {k: f"scripted {k}" for k in ("analysis", "rule", "query") if k in fields}
    if "summary" in fields and "rule" in fields:
        return {"analysis": "scripted", "rule": "scripted rule", "summary": "shapes on the left are round"}
    if "scene" in fields:
        lists = ("living_beings", "inanimate_objects", "activities", "dominant_colors", "textures")
        return {k: [f"scripted {request.images[-1]}"] if k in lists else f"scripted {k}" for k in fields}
    if "set_a_rule" in fields:
        return {
            "analysis": "scripted",
            "set_a_rule": "scripted left rule",
            "set_b_rule": "scripted right rule",
        }
    if fields == {"positive", "negative"}:
        return {"positive": f"two red circles seen in {request.images[-1]}", "negative": "squares"}
    if fields == {"prompts"}:
        count = int(call.extra["count"])
        return {"prompts": [f"{n + 1} blue triangles" for n in range(count)]}
    if fields == {"explanation", "verdict"}:  # an image review: the scripted description names the panel
        return {"explanation": "scripted", "verdict": "left" if "['left" in request.text() else "right"}
    if "left_concept" in fields:
        return {"explanation": "scripted", "left_concept": "scripted left", "right_concept": "scripted right"}
    if "option" in fields:
        return {"analysis": "scripted", "option": 1}
    if fields == {"probe"}:
        return {"probe": "Which of the two concepts does the figure show?"}
    if "concept" in fields and "reasoning" in fields:
        return {"reasoning": "scripted", "concept": 1 if request.images[-1][0].startswith("left") else 2}
    if "hypotheses" in fields:
        count = int(call.extra.get("count", 20))
        return {"hypotheses": [{"set_a_rule": f"left {n}", "set_b_rule": f"right {n}"} for n in range(count)]}
    return None


def default_reply(request: Request) -> str:
    task, extra = request.call.task, request.call.extra
    structured = structured_reply(request)
    if structured is not None:
        return json.dumps(structured)
    if task == "describe":
        return f"described {request.images[-1]}"
    if task == "compare":
        return f"compared {request.images[-2:]}"
    if task == "answer":
        return "Left: scripted left rule\nRight: scripted right rule"
    if task == "judge":
        return json.dumps({"verdict": "OK"})
    if task == "select":
        return json.dumps({"explanation": "scripted", "label": 1})
    if task == "classify" and len(extra.get("test_panels", [])) == 2:
        first, second = (ref.split("-")[0].upper() for ref in extra["test_panels"])
        return json.dumps(
            {
                "concept": "scripted concept",
                "first": {"explanation": "", "concept": "", "answer": first},
                "second": {"explanation": "", "concept": "", "answer": second},
            }
        )
    if task == "classify":
        side = extra["test_panels"][0].split("-")[0].upper()
        return json.dumps({"concept": "", "explanation": "", "answer": side})
    return "scripted reply"


class RequestLog(list[Request]):
    """The requests a scripted model received (a class of its own, so pydantic keeps the reference)."""


class ScriptedChatModel(BaseChatModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    requests: RequestLog
    reply: Callable[[Request], str] = default_reply

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        request = Request(list(messages), kwargs["call"])
        self.requests.append(request)
        text = self.reply(request)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


@dataclass
class ScriptedAgent:
    """A managed scripted agent and the requests it received."""

    spec: str = "scripted:recorder"
    requests: RequestLog = field(default_factory=RequestLog)
    reply: Callable[[Request], str] = default_reply

    def managed(self) -> ManagedAgent:
        model = ScriptedChatModel(requests=self.requests, reply=self.reply)
        provider = Provider(
            name="scripted", summary="records requests", build=lambda m, p: model, reads_call_metadata=True
        )
        return ManagedAgent(spec=self.spec, inner=model, provider=provider)
