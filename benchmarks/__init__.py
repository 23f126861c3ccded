"""Benchmarks: figures and ratios measured side by side in one run; never a CI gate."""
