"""Bongard-RWR+'s generation pipeline: its tools, the reviewable graph over them, a generation run and
the dataset variants."""
