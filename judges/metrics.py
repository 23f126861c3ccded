"""Text metrics for concept generation: BLEU-1/2, ROUGE-L, METEOR, CIDEr, BERTScore, embedding similarity.

Each comes from the library the field uses (NLTK, rouge-score, pycocoevalcap,
bert-score, sentence-transformers with the offline MiniLM). The Hugging Face
hub is treated as offline unless HF_HUB_OFFLINE=0 is set. A metric whose
library or resources cannot be loaded offline (METEOR needs NLTK's WordNet
data, BERTScore its model weights) reports why in one line; the others still
run. Scores are averaged over all (reference, candidate) pairs; CIDEr is
computed over the whole set, as its IDF weights require.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

WORD = re.compile(r"[\w']+")
METRICS = ("bleu1", "bleu2", "rouge_l", "meteor", "cider", "bertscore_f1", "embedding")


@dataclass(frozen=True)
class MetricScore:
    name: str
    value: float | None
    note: str | None = None
    """Why the metric could not be computed, in one line."""


def tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


def _bleu(order: int) -> Callable[[Sequence[str], Sequence[str]], float]:
    def score(references: Sequence[str], candidates: Sequence[str]) -> float:
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        weights = tuple(1.0 / order for _ in range(order))
        smooth = SmoothingFunction().method1
        values = [
            sentence_bleu([tokens(ref)], tokens(cand), weights=weights, smoothing_function=smooth)
            for ref, cand in zip(references, candidates, strict=True)
        ]
        return float(sum(values) / len(values))

    return score


def _rouge_l(references: Sequence[str], candidates: Sequence[str]) -> float:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    values = [
        scorer.score(ref, cand)["rougeL"].fmeasure for ref, cand in zip(references, candidates, strict=True)
    ]
    return float(sum(values) / len(values))


def _meteor(references: Sequence[str], candidates: Sequence[str]) -> float:
    from nltk.translate.meteor_score import meteor_score

    values = [
        meteor_score([tokens(ref)], tokens(cand)) for ref, cand in zip(references, candidates, strict=True)
    ]
    return float(sum(values) / len(values))


def _cider(references: Sequence[str], candidates: Sequence[str]) -> float:
    from pycocoevalcap.cider.cider import Cider

    gts = {i: [" ".join(tokens(ref))] for i, ref in enumerate(references)}
    res = {i: [" ".join(tokens(cand))] for i, cand in enumerate(candidates)}
    score, _ = Cider().compute_score(gts, res)
    return float(score)


def _bertscore(references: Sequence[str], candidates: Sequence[str]) -> float:
    # Offline unless the user asks otherwise (HF_HUB_OFFLINE=0): no minute of retries per run.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bert_score import score

    _, _, f1 = score(list(candidates), list(references), lang="en", rescale_with_baseline=True, verbose=False)
    return float(f1.mean())


def _embedding(references: Sequence[str], candidates: Sequence[str]) -> float:
    from agents.embeddings import embed_texts

    refs, cands = embed_texts(references), embed_texts(candidates)
    return float((refs * cands).sum(axis=1).mean())


_SCORERS: dict[str, Callable[[Sequence[str], Sequence[str]], float]] = {
    "bleu1": _bleu(1),
    "bleu2": _bleu(2),
    "rouge_l": _rouge_l,
    "meteor": _meteor,
    "cider": _cider,
    "bertscore_f1": _bertscore,
    "embedding": _embedding,
}


def concept_metrics(
    references: Sequence[str], candidates: Sequence[str], metrics: Sequence[str] = METRICS
) -> list[MetricScore]:
    """Every requested metric over paired references and candidates; failures reported, not raised."""
    if len(references) != len(candidates) or not references:
        raise ValueError("metrics need as many candidates as references, and at least one")
    unknown = [name for name in metrics if name not in _SCORERS]
    if unknown:
        raise ValueError(f"unknown metrics {', '.join(unknown)}; metrics: {', '.join(METRICS)}")
    results = []
    for name in metrics:
        try:
            results.append(MetricScore(name, _SCORERS[name](references, candidates)))
        except Exception as error:  # a library's own failure to load offline, whatever its type
            first_line = next((ln.strip() for ln in str(error).splitlines() if re.search("[A-Za-z]", ln)), "")
            results.append(
                MetricScore(name, None, f"{name} unavailable offline: {type(error).__name__}: {first_line}")
            )
    return results
