"""Text metrics for concept generation: BLEU-1/2, ROUGE-L, METEOR, CIDEr, BERTScore, embedding similarity.

Each comes from the library the field uses (NLTK, rouge-score, pycocoevalcap,
bert-score, sentence-transformers with the offline MiniLM). BERTScore is
reported as precision, recall and F1 with DeBERTa-xlarge-MNLI and baseline
rescaling, as Bongard-RWR+ reports it (App. C.6). The Hugging Face
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
from functools import cache

WORD = re.compile(r"[\w']+")
BERTSCORE = ("bertscore_p", "bertscore_r", "bertscore_f1")
METRICS = ("bleu1", "bleu2", "rouge_l", "meteor", "cider", *BERTSCORE, "embedding")


class MissingResource(RuntimeError):
    """What a metric needs and cannot load here, named in one line."""


@dataclass(frozen=True)
class BertScoreModel:
    """The model BERTScore embeds with: a Hugging Face id or a local folder, the layer it reads,
    and whether scores are rescaled with the baseline bert-score ships for that model."""

    model_type: str
    num_layers: int
    rescale_with_baseline: bool = True


PAPER_BERTSCORE = BertScoreModel("microsoft/deberta-xlarge-mnli", 40)
"""Bongard-RWR+ App. C.6: DeBERTa-xlarge-MNLI (bert-score's recommended layer 40), rescaled."""


@dataclass(frozen=True)
class MetricScore:
    name: str
    value: float | None
    note: str | None = None
    """Why the metric could not be computed, in one line."""


def tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


Scorer = Callable[[Sequence[str], Sequence[str]], float]
"""Paired references and candidates -> the metric's mean (or corpus) value."""


def _bleu(order: int) -> Scorer:
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


@cache
def _bertscore_prf(
    references: tuple[str, ...], candidates: tuple[str, ...], model: BertScoreModel
) -> tuple[float, float, float]:
    """Mean precision, recall and F1, computed once for the three metrics."""
    # Offline unless the user asks otherwise (HF_HUB_OFFLINE=0): no minute of retries per run.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bert_score import score

    try:
        p, r, f1 = score(
            list(candidates),
            list(references),
            model_type=model.model_type,
            num_layers=model.num_layers,
            lang="en",
            rescale_with_baseline=model.rescale_with_baseline,
            verbose=False,
        )
    except Exception as error:  # the weights cannot be had: name the model the paper used
        raise MissingResource(f"needs the weights of {model.model_type} ({type(error).__name__})") from error
    return float(p.mean()), float(r.mean()), float(f1.mean())


def _bertscore(model: BertScoreModel, which: int) -> Scorer:
    def score(references: Sequence[str], candidates: Sequence[str]) -> float:
        return _bertscore_prf(tuple(references), tuple(candidates), model)[which]

    return score


def _embedding(references: Sequence[str], candidates: Sequence[str]) -> float:
    from agents.embeddings import embed_texts

    refs, cands = embed_texts(references), embed_texts(candidates)
    return float((refs * cands).sum(axis=1).mean())


def _scorers(bertscore: BertScoreModel) -> dict[str, Scorer]:
    return {
        "bleu1": _bleu(1),
        "bleu2": _bleu(2),
        "rouge_l": _rouge_l,
        "meteor": _meteor,
        "cider": _cider,
        **{name: _bertscore(bertscore, which) for which, name in enumerate(BERTSCORE)},
        "embedding": _embedding,
    }


def concept_metrics(
    references: Sequence[str],
    candidates: Sequence[str],
    metrics: Sequence[str] = METRICS,
    bertscore: BertScoreModel = PAPER_BERTSCORE,
) -> list[MetricScore]:
    """Every requested metric over paired references and candidates; failures reported, not raised."""
    if len(references) != len(candidates) or not references:
        raise ValueError("metrics need as many candidates as references, and at least one")
    scorers = _scorers(bertscore)
    unknown = [name for name in metrics if name not in scorers]
    if unknown:
        raise ValueError(f"unknown metrics {', '.join(unknown)}; metrics: {', '.join(METRICS)}")
    results = []
    for name in metrics:
        try:
            results.append(MetricScore(name, scorers[name](references, candidates)))
        except Exception as error:  # a library's own failure to load offline, whatever its type
            first_line = next((ln.strip() for ln in str(error).splitlines() if re.search("[A-Za-z]", ln)), "")
            named = isinstance(error, MissingResource)
            why = first_line if named else f"{type(error).__name__}: {first_line}"
            results.append(MetricScore(name, None, f"{name} unavailable offline: {why}"))
    return results
