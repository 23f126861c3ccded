"""An offline ensemble member for machines without keys: similarity of sentence embeddings.

Named for what it is (`embedding:THRESHOLD`), never presented as an LLM judge:
the answer is ok when the cosine similarity of its MiniLM embedding to the
true concept's reaches the threshold. Registered as the judge kind `embedding`
through the toolkit's own entry point.
"""

from __future__ import annotations

import asyncio

from agents.embeddings import cosine_similarity
from datasets_io.problem import Concept
from judges.errors import JudgeError
from judges.verdict import Verdict

DEFAULT_THRESHOLD = 0.7


def concept_text(concept: Concept) -> str:
    """How a concept is put into words for comparison with an answer."""
    return f"Left: {concept.left}\nRight: {concept.stated_right}"


class EmbeddingJudge:
    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not 0 < threshold <= 1:
            raise JudgeError(f"embedding judge threshold must be in (0, 1], not {threshold}")
        self.threshold = threshold

    @property
    def name(self) -> str:
        return f"embedding:{self.threshold:g}"

    async def judge(self, concept: Concept, answer: str) -> Verdict:
        similarity = await asyncio.to_thread(cosine_similarity, concept_text(concept), answer)
        return Verdict(
            judge=self.name,
            label="ok" if similarity >= self.threshold else "wrong",
            raw_text=f"cosine similarity {similarity:.3f} (threshold {self.threshold:g})",
            reason=f"cosine {similarity:.3f}",
        )


def embedding_judge(threshold: str) -> EmbeddingJudge:
    """The judge kind `embedding[:THRESHOLD]`: the threshold as written after the colon, if any."""
    if not threshold:
        return EmbeddingJudge()
    try:
        value = float(threshold)
    except ValueError:
        raise JudgeError(f"embedding judge threshold must be a number in (0, 1], not {threshold!r}") from None
    return EmbeddingJudge(value)
