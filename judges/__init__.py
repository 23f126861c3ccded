"""bongard-agents: was it right: verdicts, voting ensembles, text metrics and agreement statistics."""

from agents.deferred_imports import defer_package_inits

defer_package_inits()  # before LangChain or LangGraph is imported: agents/deferred_imports.py
