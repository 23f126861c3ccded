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

SIMILARITY_COLUMNS = ["run_id", "polarity", "pairs", "mean", "std", "mean_low", "mean_high"]
Z_95 = 1.959964
"""The normal quantile of a two-sided 95% interval."""


def pair_similarities(rules: list[str], descriptions: list[str]) -> list[float]:
    """Cosine similarity of each (rule, description) pair."""
    if not rules:
        return []
    return [float(v) for v in (embed_texts(rules) * embed_texts(descriptions)).sum(axis=1)]


def rule_description_similarity(queries: pd.DataFrame, correct_only: bool = False) -> pd.DataFrame:
    """Per run and polarity: the (rule, description) pairs found, their mean and (population)
    standard deviation of similarity, and the mean's 95% interval (normal approximation, the sample
    standard deviation over the square root of the pairs); `queries` is
    `results.query_report.query_frame`."""
    usable = queries[queries["rule"].notna() & queries["description"].notna()]
    if correct_only:
        usable = usable[usable["correct"]]
    usable = usable.assign(similarity=pair_similarities(list(usable["rule"]), list(usable["description"])))
    table = (
        usable.groupby(["run_id", "polarity"], sort=False)["similarity"]
        .agg(pairs="count", mean="mean", std=lambda s: s.std(ddof=0), error=lambda s: s.sem(ddof=1))
        .reset_index()
    )
    margin = Z_95 * table["error"].astype(float).fillna(0)
    table["mean_low"], table["mean_high"] = table["mean"] - margin, table["mean"] + margin
    columns = ["mean", "std", "mean_low", "mean_high"]
    table[columns] = table[columns].astype(float).round(4)
    return table[SIMILARITY_COLUMNS]
