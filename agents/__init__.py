"""bongard-agents: who answers: chat models and non-LLM agents behind one LangChain interface."""

from agents.deferred_imports import defer_package_inits

defer_package_inits()  # before LangChain or LangGraph is imported: agents/deferred_imports.py
