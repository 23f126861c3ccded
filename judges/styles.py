"""The LLM judges' prompt styles, apart from the judge itself so that the CLI can offer them
without loading LangChain."""

from typing import Literal

JudgeStyle = Literal["strict", "rubric"]
"""`strict`: the case study's logical-match prompt; `rubric`: Wonderland's 0/1 rubric."""
