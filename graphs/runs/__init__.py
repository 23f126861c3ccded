"""A run over a dataset: the runner and its workers, checkpoints, provenance, and judging stored answers."""
