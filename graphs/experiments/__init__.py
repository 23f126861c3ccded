"""Experiments of bongard-agents: a grid of strategies x models x datasets, planned, priced, run."""
