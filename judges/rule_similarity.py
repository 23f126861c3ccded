"""How close a model's description of each query is to the rule it classified the query by.

The semantic-similarity analysis of Vaishnav & Tammet (Sec. 7.3, Table A.4):
the cosine similarity of sentence embeddings (the offline all-MiniLM-L6-v2 here,
where the paper used OpenAI's) of the query description and the extracted
rule, summarised as mean and standard deviation over positive and negative
queries. A perception that serves the rule should give positives the higher
similarity.
"""

from __future__ import annotations

import pandas as pd

from agents.embeddings import embed_texts

SIMILARITY_COLUMNS = ["run_id", "polarity", "pairs", "mean", "std"]


def pair_similarities(rules: list[str], descriptions: list[str]) -> list[float]:
    """Cosine similarity of each (rule, description) pair."""
    if not rules:
        return []
    return [float(v) for v in (embed_texts(rules) * embed_texts(descriptions)).sum(axis=1)]


def rule_description_similarity(queries: pd.DataFrame, correct_only: bool = False) -> pd.DataFrame:
    """Per run and polarity: the (rule, description) pairs found, their mean and (population)
    standard deviation of similarity; `queries` is `datasets_io.query_report.query_frame`."""
    usable = queries[queries["rule"].notna() & queries["description"].notna()]
    if correct_only:
        usable = usable[usable["correct"]]
    usable = usable.assign(similarity=pair_similarities(list(usable["rule"]), list(usable["description"])))
    table = (
        usable.groupby(["run_id", "polarity"], sort=False)["similarity"]
        .agg(pairs="count", mean="mean", std=lambda s: s.std(ddof=0))
        .reset_index()
    )
    table[["mean", "std"]] = table[["mean", "std"]].astype(float).round(4)
    return table[SIMILARITY_COLUMNS]
