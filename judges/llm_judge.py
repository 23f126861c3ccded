"""LLM judges: a strict logical-match judge and a rubric judge, prompts as data.

The verdict is read only from the judge's own verdict lines as written (`EVALUATION: OK|WRONG` or a
bare `OK|WRONG`, not quoted nor in a code block), read as a reader sees them (NFKC, invisible
characters dropped), or from the `answer` field of its JSON. A quoted verdict, such as one the judge
copies from the answer after its own, never counts. A reply is undecided when its verdict lines
disagree (an OK and a WRONG: which one is the judge's cannot be told, whichever comes last) or when
one of them is also a line of the judged answer, compared with emphasis, case and every space
removed (verbatim, retyped as `EVALUATION :OK`, full-width, padded, in emphasis, a bare `OK`):
measured, such replies turned 0/5 into 5/5 accepted under `vote:2`. The judged answer goes in as
data (`judges.answer_data`), so nothing in it can pose as the end of the data or as the verdict. A
reply with no verdict line is re-asked once, then the verdict is an abstention.
"""

from __future__ import annotations

import re
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from agents.call import AgentReply, CallSpec
from agents.managed import ManagedAgent
from agents.prompt_library import PromptLibrary, prompt_family
from datasets_io.problem import Concept
from datasets_io.records import REFUSAL_STOPS, VerdictLabel
from judges.answer_data import ANSWER_LIMIT_CHARS, fenced, visible
from judges.styles import JudgeStyle
from judges.verdict import Verdict

JUDGES = prompt_family("judges", "judges")
VERDICT_LINE = re.compile(r"^[\s*_#]*(?:EVALUATION\s*:[\s*_]*)?(OK|WRONG)[\s*_.!]*$", re.IGNORECASE)
"""A verdict line as written: "EVALUATION: OK", or the bare "OK" / "WRONG" the case study's prompt
asks for, in Markdown emphasis at most; a line in quotes or after `>` is a quotation, not a verdict."""


class RubricVerdict(BaseModel):
    answer: Literal[0, 1]


REPEATED = "the judge's reply repeats a verdict line of the judged answer: whose verdict it is is unknown"
CONFLICTING = "the judge's reply holds both an OK and a WRONG verdict line: which is its own is unknown"
Label = Literal["ok", "wrong"]
MARKS = frozenset("*_#>`\"'.!")
"""Emphasis, quoting and closing punctuation: nothing a retyped line must keep to be the same line."""


def _verdict_lines(text: str) -> list[tuple[str, Label]]:
    """The reply's verdict lines as seen, outside code blocks (quotations are not verdict lines), in order."""
    found: list[tuple[str, Label]] = []
    in_code = False
    for line in visible(text).splitlines():
        in_code ^= line.lstrip().startswith("```")
        match = None if in_code else VERDICT_LINE.match(line)
        if match is not None:
            found.append((line, "ok" if match.group(1).upper() == "OK" else "wrong"))
    return found


def final_evaluation(text: str) -> Label | None:
    """The judge's verdict: what its verdict lines outside code blocks (and quotations) all say; None
    when it wrote none, or lines that disagree."""
    labels = {label for _, label in _verdict_lines(text)}
    return labels.pop() if len(labels) == 1 else None


def _bare(line: str) -> str:
    """A line as compared across texts: as a reader sees it, without emphasis, quoting or any
    whitespace, in any case, so a retyped line (`EVALUATION :OK`) is the line it copies."""
    return "".join(char for char in visible(line) if not char.isspace() and char not in MARKS).casefold()


def repeats_answer(text: str, answer: str) -> bool:
    """Whether a verdict line of the judge's reply is also a line of the answer it judged."""
    answer_lines = {_bare(line) for line in visible(answer).splitlines()} - {""}
    return any(_bare(line) in answer_lines for line, _ in _verdict_lines(text))


def undecided(text: str, answer: str) -> str | None:
    """Why the judge's reply decides nothing whatever its verdict lines say, or None."""
    if repeats_answer(text, answer):
        return REPEATED
    if len({label for _, label in _verdict_lines(text)}) > 1:
        return CONFLICTING
    return None


TURNS = "\n---\n"
"""Between a judge's turns, in the prompt and the reply it is stored with."""


class LLMJudge:
    """One judge agent with one prompt style."""

    def __init__(
        self,
        agent: ManagedAgent,
        style: JudgeStyle = "strict",
        prompts: PromptLibrary | None = None,
        answer_limit: int = ANSWER_LIMIT_CHARS,
    ) -> None:
        """`answer_limit`: characters of an answer the judge sees; a longer one is cut, and it is told."""
        self.agent = agent
        self.style = style
        self.prompts = prompts or PromptLibrary()
        self.answer_limit = answer_limit

    @property
    def name(self) -> str:
        return self.agent.spec if self.style == "strict" else f"{self.agent.spec} ({self.style})"

    async def judge(self, concept: Concept, answer: str) -> Verdict:
        prompt = self.prompts.fill(
            JUDGES,
            self.style,
            left=concept.left,
            right=concept.stated_right,
            answer=fenced(answer, self.answer_limit),
        )
        messages: list[BaseMessage] = [HumanMessage(content=prompt)]
        asked = [prompt]
        if self.style == "rubric":
            reply = await self.agent.acall(messages, CallSpec(task="judge", output_schema=RubricVerdict))
            if (stopped := _stopped(reply)) is not None:
                return self._verdict("refused", [reply], asked, stopped)
            if reply.parsed is None:
                return self._verdict("abstain", [reply], asked, f"unreadable verdict: {reply.parse_error}")
            return self._verdict("ok" if reply.parsed["answer"] == 1 else "wrong", [reply], asked)
        first = await self.agent.acall(messages, CallSpec(task="judge"))
        if (stopped := _stopped(first)) is not None:
            return self._verdict("refused", [first], asked, stopped)
        if (why := undecided(first.text, answer)) is not None:
            return self._verdict("abstain", [first], asked, why)
        label = final_evaluation(first.text)
        if label is not None:
            return self._verdict(label, [first], asked)
        reask = self.prompts.fill(JUDGES, "strict_reask")
        follow_up = [*messages, AIMessage(content=first.text), HumanMessage(content=reask)]
        asked.append(reask)
        second = await self.agent.acall(follow_up, CallSpec(task="judge"))
        if (why := undecided(second.text, answer)) is not None:
            return self._verdict("abstain", [first, second], asked, why)
        label = final_evaluation(second.text)
        if label is None:
            return self._verdict(
                "abstain", [first, second], asked, "no final EVALUATION line, even when re-asked"
            )
        return self._verdict(label, [first, second], asked)

    def _verdict(
        self,
        label: VerdictLabel,
        replies: list[AgentReply],
        asked: list[str],
        reason: str | None = None,
    ) -> Verdict:
        """The verdict with what the judge was asked (`asked`: its prompt, then any re-ask) and said."""
        costs = [r.cost_usd for r in replies]
        return Verdict(
            judge=self.name,
            label=label,
            prompt=TURNS.join(asked),
            raw_text=TURNS.join(r.text for r in replies),
            reason=reason,
            input_tokens=sum(r.usage.input_tokens for r in replies),
            output_tokens=sum(r.usage.output_tokens for r in replies),
            cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
            cache_hit=all(r.cache_hit for r in replies),
        )


def _stopped(reply: AgentReply) -> str | None:
    """Why a judge gives no verdict at once, not re-asked: its reply was refused or blocked (a filter
    would block the re-ask too), with the provider's words; None for any other reply."""
    if reply.stop not in REFUSAL_STOPS:
        return None
    return f"the judge's reply was {reply.stop}: {reply.stop_reason}"
